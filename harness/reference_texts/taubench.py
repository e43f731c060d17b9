"""Fetching and checking the original τ-bench's data folder (`$TAUBENCH_DATA_DIR`).

`fetch_taubench` downloads the pinned release (`data/taubench_pins.json`), unpacks its source,
runs `taubench_dump.py` on it with this Python (the release's code needs only pydantic and
litellm, which tau-mcp has), checks every file it wrote against the pins, and only then moves
the folder into place, with a MANIFEST.json of what it holds. `verify_taubench_dir` checks a
folder (the shared copy, or a fetched one) against the same pins.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from tau_mcp.servers.domains.tau_bench.spec import PINS_FILE as PINS_NAME
from tau_mcp.servers.domains.tau_bench.spec import taubench_cache_dir
from tau_mcp.servers.engine.data import bundled
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.pins import Verification, content_sha256, download_release

PINS_FILE = bundled(PINS_NAME)
DUMP_SCRIPT = Path(__file__).with_name("taubench_dump.py")
DUMP_TIMEOUT = 600.0


def load_taubench_pins(path: Path = PINS_FILE) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read the τ-bench pin list {path}: {exc}") from None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verify_taubench_dir(folder: Path, pins: dict[str, Any] | None = None) -> Verification:
    """Every pinned file present and equal to its pin (by bytes, or by content for the files
    whose notes are their exporter's own words)."""
    pins = pins or load_taubench_pins()
    problems = []
    for rel, sha in sorted(pins["files"].items()):
        path = folder / rel
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif _sha256(path) != sha:
            problems.append(f"{rel}: sha256 differs from the pin")
    for rel, pin in sorted(pins["content_pins"].items()):
        path = folder / rel
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
            same = content_sha256(document, pin["values"]) == pin["sha256"]
        except FileNotFoundError:
            problems.append(f"{rel}: missing")
            continue
        except (OSError, ValueError, KeyError) as exc:
            problems.append(f"{rel}: unreadable ({exc})")
            continue
        if not same:
            problems.append(f"{rel}: values differ from the content pin")
    checked = len(pins["files"]) + len(pins["content_pins"])
    return Verification(folder, checked, problems)


def fetch_taubench(
    dest: Path | None = None, *, timeout: float = 30.0, url: str | None = None
) -> Path:
    """Download, export and verify the pinned τ-bench release into `dest` (default: the user
    cache); on any failure nothing is left behind."""
    pins = load_taubench_pins()
    dest = Path(dest) if dest is not None else taubench_cache_dir()
    payload = download_release(pins, url, timeout, "the τ-bench release", "TAUBENCH_DATA_DIR")
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".fetch-taubench-", dir=dest.parent))
    try:
        source, staging = work / "source", work / "data"
        _unpack(payload, source, pins["archive_folders"])
        _export(source, staging)
        result = verify_taubench_dir(staging, pins)
        if not result.ok:
            raise DataError(
                "the exported τ-bench data does not match the pins: "
                + "; ".join(result.problems[:5])
            )
        _manifest(staging, pins)
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _unpack(payload: bytes, source: Path, wanted: list[str]) -> None:
    """The archive's files under the wanted folders (below its top folder) into `source`."""
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as archive:
            for member in archive.getmembers():
                parts = member.name.split("/", 1)
                if len(parts) != 2 or not member.isfile():
                    continue
                if not any(parts[1] == w or parts[1].startswith(w) for w in wanted):
                    continue
                if ".." in Path(parts[1]).parts:
                    continue
                target = source / parts[1]
                target.parent.mkdir(parents=True, exist_ok=True)
                extracted = archive.extractfile(member)
                if extracted is not None:
                    target.write_bytes(extracted.read())
    except tarfile.TarError as exc:
        raise DataError(f"the downloaded archive is not a readable tar.gz ({exc})") from None


def _export(source: Path, staging: Path) -> None:
    try:
        done = subprocess.run(
            [sys.executable, str(DUMP_SCRIPT), str(source), str(staging)],
            capture_output=True,
            text=True,
            timeout=DUMP_TIMEOUT,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DataError(f"exporting the τ-bench release failed ({exc})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise DataError(f"exporting the τ-bench release failed: {last}")


def _manifest(folder: Path, pins: dict[str, Any]) -> None:
    files = {
        str(path.relative_to(folder)): {"sha256": _sha256(path), "bytes": path.stat().st_size}
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }
    manifest = {"reference": pins["reference"], "files": files}
    (folder / "MANIFEST.json").write_text(json.dumps(manifest, indent=2) + "\n")
