"""Checking a data folder against the pinned reference release, and fetching that release.

The pin list (`data/reference_pins.json`) names every data file with its sha256. A few files of
the shared copy were rebuilt from the same records, so for them we check what they contain
(record counts, task ids) instead of their bytes. The reference texts (`tau2/reference_texts/`) are not in
the release: they are generated from it (see `tau_mcp.harness.reference_texts`). Their notes are ours, so
they carry content pins: the sha256 of the values at the listed JSON paths, which the shared copy
and a freshly generated folder both meet.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.data import default_cache_dir, load_pins
from tau_mcp.servers.engine.errors import DataError

ARCHIVE_URL = "https://codeload.github.com/{repository}/tar.gz/{commit}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _check_content(folder: Path, rel: str, rule: dict[str, Any]) -> str | None:
    try:
        data = json.loads((folder / rel).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        return f"{rel}: unreadable ({exc})"
    if rule["kind"] == "record_counts":
        got = {k: len(data.get(k, {})) for k in rule["counts"]} if isinstance(data, dict) else {}
        if got != rule["counts"]:
            return f"{rel}: record counts {got} differ from the pinned {rule['counts']}"
        return None
    if rule["kind"] == "task_ids":
        try:
            split_ids = json.loads((folder / rule["split_file"]).read_text())[rule["split"]]
        except (OSError, json.JSONDecodeError, KeyError) as exc:
            return f"{rule['split_file']}: no '{rule['split']}' split ({exc})"
        have = {t.get("id") for t in data} if isinstance(data, list) else set()
        missing = [t for t in split_ids if t not in have]
        ids_sha = hashlib.sha256("\n".join(sorted(split_ids)).encode()).hexdigest()
        if len(split_ids) != rule["count"] or ids_sha != rule["ids_sha256"]:
            return f"{rel}: the '{rule['split']}' split is not the pinned task list"
        if missing:
            return f"{rel}: {len(missing)} tasks of the '{rule['split']}' split are missing"
        return None
    return f"{rel}: unknown check kind {rule['kind']!r}"


@dataclass
class Verification:
    folder: Path
    checked: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


def content_pins(pins: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The generated texts' pins: file -> {"sha256": ..., "values": [JSON paths]}, and
    optionally "optional": {"sha256", "values"}, checked only where the file holds them."""
    return pins.get("reference_texts", {}).get("content_pins", {})


def value_at(document: Any, path: str) -> Any:
    """The value at a "/"-joined JSON path (list items by index); KeyError when absent."""
    for key in path.split("/"):
        if isinstance(document, dict) and key in document:
            document = document[key]
        elif isinstance(document, list) and key.isdigit() and int(key) < len(document):
            document = document[int(key)]
        else:
            raise KeyError(path)
    return document


def content_sha256(document: Any, paths: list[str]) -> str:
    """The sha256 of the values at `paths`, as canonical JSON of a sorted {path: value} map:
    the same for any file holding the same values, whatever else it holds or how it is laid
    out."""
    values = {path: value_at(document, path) for path in paths}
    canonical = json.dumps(values, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _has_value(document: Any, path: str) -> bool:
    try:
        value_at(document, path)
    except KeyError:
        return False
    return True


def _check_values(folder: Path, rel: str, pin: dict[str, Any]) -> str | None:
    """A generated text against its content pin; its optional group (values that texts
    generated before the group existed lack) only when the file holds any of them."""
    try:
        document = json.loads((folder / rel).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        return f"{rel}: unreadable ({exc})"
    groups = [(pin, "values")]
    optional = pin.get("optional")
    if optional and any(_has_value(document, path) for path in optional["values"]):
        groups.append((optional, "optional values"))
    for group, label in groups:
        try:
            digest = content_sha256(document, group["values"])
        except KeyError as exc:
            return f"{rel}: has no value at {exc.args[0]}"
        if digest != group["sha256"]:
            return f"{rel}: {label} differ from the content pin"
    return None


def verify_data_dir(
    folder: Path, pins: dict[str, Any] | None = None, *, generated: bool = True
) -> Verification:
    """Check every pinned file: present, and byte-identical or content-identical. Without
    `generated`, only the files the release itself contains; with it, the reference texts too,
    by their content pins."""
    pins = pins or load_pins()
    files = dict(pins["files"])
    texts = content_pins(pins) if generated else {}
    problems: list[str] = []
    checks = pins.get("content_checks", {})
    for rel in sorted({*files, *texts}):
        path = folder / rel
        if not path.is_file():
            how = " (made by `tau-harness data fetch`)" if rel in texts else ""
            problems.append(f"{rel}: missing{how}")
            continue
        if rel in texts:
            problem = _check_values(folder, rel, texts[rel])
        elif rel in checks:
            problem = _check_content(folder, rel, checks[rel])
        else:
            problem = None if _sha256(path) == files[rel] else f"{rel}: sha256 differs from the pin"
        if problem:
            problems.append(problem)
    return Verification(folder, len(files) + len(texts), problems)


# Writes the generated files into the staging folder, given the downloaded release archive.
Generator = Callable[[bytes, Path, dict[str, Any]], None]


def download_release(
    pins: dict[str, Any], url: str | None, timeout: float, what: str, env_var: str
) -> bytes:
    """The pinned release's archive (`url`, or GitHub's archive of the pinned commit), as
    bytes; a failed download is one sentence naming the variable that points at a copy."""
    url = url or ARCHIVE_URL.format(repository=pins["repository"], commit=pins["commit"])
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - fixed https URL
            return response.read()
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(
            f"could not download {what} from {url} ({reason}); on a machine without "
            f"network, point {env_var} at a local copy instead"
        ) from None


def fetch_reference(
    dest: Path | None = None,
    *,
    timeout: float = 30.0,
    url: str | None = None,
    generate: Generator | None = None,
) -> Path:
    """Download the pinned release's data into `dest`, generate the reference texts with
    `generate` when given, and verify it all; the folder appears only when every file checks
    out (without `generate`, the generated texts are neither made nor checked)."""
    pins = load_pins()
    dest = dest or default_cache_dir(pins)
    payload = download_release(pins, url, timeout, "the reference data", "TAU2_DATA_DIR")
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".fetch-", dir=dest.parent))
    try:
        _extract(payload, staging, pins)
        if generate is not None:
            generate(payload, staging, pins)
        result = verify_data_dir(staging, pins, generated=generate is not None)
        if not result.ok:
            raise DataError(
                "the downloaded data does not match the pins: " + "; ".join(result.problems[:5])
            )
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(staging, dest)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return dest


def archive_sources(pins: dict[str, Any]) -> dict[str, str]:
    """Each pinned file's path inside the release archive (below its top folder): under
    `archive_prefix`, unless an `archive_paths` entry maps the start of its path elsewhere
    (the leaderboard's submissions live outside the data folder)."""
    prefix = pins.get("archive_prefix", "data/")
    moved = pins.get("archive_paths", {})
    sources = {}
    for rel in pins["files"]:
        start = next((p for p in moved if rel.startswith(p)), None)
        sources[rel] = moved[start] + rel[len(start) :] if start else prefix + rel
    return sources


def _extract(payload: bytes, staging: Path, pins: dict[str, Any]) -> None:
    wanted = {source: rel for rel, source in archive_sources(pins).items()}
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as archive:
            for member in archive.getmembers():
                parts = member.name.split("/", 1)
                if len(parts) != 2 or not member.isfile() or parts[1] not in wanted:
                    continue
                rel = wanted[parts[1]]
                target = staging / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                if source is not None:
                    target.write_bytes(source.read())
    except tarfile.TarError as exc:
        raise DataError(f"the downloaded archive is not a readable tar.gz ({exc})") from None
