"""`tau-harness convert-results`: a results file or folder into another layout, whole or not at all.

In place by default, as the reference converts (a `.bak` copy of what is replaced unless
`--no-backup`), or into a new path with `-o`. Layouts: see `tau_mcp.harness.results.layouts`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tau_mcp.harness.results.file import atomic_write, journal_path
from tau_mcp.harness.results.folder import META_FILE, SIMULATIONS_DIR, LayoutError, dir_paths
from tau_mcp.harness.results.layouts import (
    Layout,
    convert_document,
    detect,
    dir_files,
    read,
    single_file_text,
)


@dataclass(frozen=True)
class Conversion:
    source: Layout
    target: Layout
    written: Path
    simulations: int
    backups: tuple[Path, ...] = ()


def default_target(source: Layout) -> Layout:
    """The reference's default: a folder becomes a single file, a single file a folder."""
    return "json" if source == "dir" else "dir"


def convert(
    path: Path,
    target: Layout | None = None,
    output: Path | None = None,
    *,
    backup: bool = True,
) -> Conversion | None:
    """Convert; None when the input is in the target layout already (nothing to do)."""
    path = Path(path)
    source = detect(path)
    target = target or default_target(source)
    if source == target and output is None:
        return None
    if source != "dir" and journal_path(path).exists():
        raise LayoutError(
            f"{path} belongs to an unfinished run ({journal_path(path).name} is beside it); "
            "finish it by rerunning with the same --save-to, then convert"
        )
    document = convert_document(read(path), source, target)
    count = len(document["simulations"])
    if output is not None:
        _refuse_existing(output, target)
        written = _write(document, target, Path(output))
        return Conversion(source, target, written, count)
    backups = _backup(path, source) if backup else ()
    written = _write_in_place(document, path, source, target)
    return Conversion(source, target, written, count, backups)


def _refuse_existing(output: Path, target: Layout) -> None:
    taken = [output]
    if target == "dir" and output.suffix == ".json":
        taken.append(output.parent / SIMULATIONS_DIR)
    for place in taken:
        if place.exists():
            raise LayoutError(f"{place} already exists; choose another -o or remove it first")


def _write(document: dict, target: Layout, output: Path) -> Path:
    if target != "dir":
        atomic_write(output, single_file_text(document, target))
        return output
    if output.suffix == ".json":  # a results.json with simulations/ beside it
        _write_folder(document, output, output.parent / SIMULATIONS_DIR)
        return output
    _write_folder(document, output / META_FILE, output / SIMULATIONS_DIR)
    return output


def _write_folder(document: dict, meta: Path, sims: Path) -> None:
    """Simulations into a temporary folder renamed into place, then the metadata: a reader
    never finds a folder whose metadata lists simulations that are not there."""
    files = dir_files(document)
    sims.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{sims.name}.", dir=sims.parent))
    try:
        for name, payload in files.items():
            if name != META_FILE:
                (staging / Path(name).name).write_bytes(payload)
        old = None
        if sims.exists():
            old = sims.with_name(f".{sims.name}.old-{os.getpid()}")
            sims.rename(old)
        staging.rename(sims)
        atomic_write(meta, files[META_FILE].decode("utf-8"))
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _backup(path: Path, source: Layout) -> tuple[Path, ...]:
    if source != "dir":
        target = path.with_name(path.name + ".bak")
        shutil.copy2(path, target)
        return (target,)
    meta, sims = dir_paths(path)  # type: ignore[misc]
    made = [meta.with_name(meta.name + ".bak")]
    shutil.copy2(meta, made[0])
    sims_backup = sims.with_name(sims.name + ".bak")
    if sims_backup.exists():
        shutil.rmtree(sims_backup)
    shutil.copytree(sims, sims_backup)
    made.append(sims_backup)
    return tuple(made)


def _write_in_place(document: dict, path: Path, source: Layout, target: Layout) -> Path:
    if source == "dir":
        meta, sims = dir_paths(path)  # type: ignore[misc]
        if target == "dir":
            _write_folder(document, meta, sims)
            return meta
        atomic_write(meta, single_file_text(document, target))
        shutil.rmtree(sims)
        return meta
    if target == "dir":
        sims = path.parent / SIMULATIONS_DIR
        if sims.exists():
            raise LayoutError(
                f"{sims} already exists, so {path} cannot become a folder in place; give -o FOLDER"
            )
        _write_folder(document, path, sims)
        return path
    atomic_write(path, single_file_text(document, target))
    return path
