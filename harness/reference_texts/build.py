"""Generating `tau2/reference_texts/` from the pinned reference release.

The release's own code is the only faithful source of what it shows a model, so `tau-harness
data fetch` unpacks the release's source from the archive it already downloaded, installs it into
a throwaway virtualenv (the reference needs Python 3.12 or 3.13 and its own dependencies, which
must not meet ours), and runs our `dump.py` with that interpreter. The virtualenv is deleted
afterwards; only the generated files stay. Their notes are ours, so the pins check them by
content: the values at the layout's marker paths must be the pinned ones.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.errors import DataError

DUMP_SCRIPT = Path(__file__).with_name("dump.py")
LAYOUT_FILE = Path(__file__).with_name("layout.json")
TEXTS_DIR = Path("tau2") / "reference_texts"
PYTHON_ENV = "TAU_REFERENCE_PYTHON"
CANDIDATES = ("python3.13", "python3.12")
INSTALL_TIMEOUT = 1800.0
DUMP_TIMEOUT = 600.0


def _version(python: str) -> tuple[int, int] | None:
    try:
        out = subprocess.run(
            [python, "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    return (int(parts[0]), int(parts[1])) if out.returncode == 0 and len(parts) == 2 else None


def _supported(version: tuple[int, int] | None, requires: tuple[int, int]) -> bool:
    return version is not None and requires <= version < (3, 14)


def _requires(pins: dict[str, Any]) -> tuple[int, int]:
    spec = pins["reference_texts"].get("requires_python", ">=3.12")
    low = spec.split(",")[0].removeprefix(">=").strip()
    major, minor = low.split(".")[:2]
    return int(major), int(minor)


def find_python(pins: dict[str, Any], explicit: str | None = None) -> str:
    """An interpreter the reference release runs on: the given one, $TAU_REFERENCE_PYTHON, this
    one, or python3.13 / python3.12 on PATH."""
    requires = _requires(pins)
    wanted = f"Python {requires[0]}.{requires[1]} to 3.13"
    chosen = explicit or os.environ.get(PYTHON_ENV)
    if chosen:
        if not _supported(_version(chosen), requires):
            raise DataError(
                f"{chosen} is not {wanted}, which the reference release needs to generate its texts"
            )
        return chosen
    if _supported(sys.version_info[:2], requires):
        return sys.executable
    for name in CANDIDATES:
        found = shutil.which(name)
        if found and _supported(_version(found), requires):
            return found
    raise DataError(
        f"generating the reference texts needs {wanted} (the reference release requires it); "
        f"install one and pass --python PATH or set {PYTHON_ENV}"
    )


def unpack_source(payload: bytes, target: Path) -> Path:
    """The release's source tree (everything but its data folder) from the archive; returns the
    project folder, the one holding pyproject.toml."""
    try:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as archive:
            members = [
                m
                for m in archive.getmembers()
                if (m.isfile() or m.isdir())
                and len(m.name.split("/")) > 1
                and m.name.split("/")[1] not in ("data", "")
            ]
            archive.extractall(target, members=members, filter="data")
    except tarfile.TarError as exc:
        raise DataError(f"the downloaded archive is not a readable tar.gz ({exc})") from None
    projects = sorted(p.parent for p in target.glob("*/pyproject.toml"))
    if not projects:
        raise DataError("the downloaded archive holds no Python project (no pyproject.toml)")
    return projects[0]


def _run(command: list[str], what: str, timeout: float, env: dict[str, str] | None = None) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise DataError(f"{what} took longer than {timeout:.0f} s") from None
    except OSError as exc:
        raise DataError(f"{what} could not start ({exc.strerror})") from None
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise DataError(f"{what} failed ({lines[-1].strip() if lines else 'no output'})")


def generate_reference_texts(
    payload: bytes, data_dir: Path, pins: dict[str, Any], *, python: str | None = None
) -> None:
    """Write `data_dir/tau2/reference_texts/` by running the release in a throwaway venv."""
    interpreter = find_python(pins, python)
    with tempfile.TemporaryDirectory(prefix="tau-reference-") as tmp:
        work = Path(tmp)
        project = unpack_source(payload, work / "src")
        venv = work / "venv"
        _run([interpreter, "-m", "venv", str(venv)], "creating a virtualenv", 300)
        bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
        venv_python = str(bin_dir / "python")
        install = [venv_python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        # The `knowledge` extra: banking_knowledge's search pipelines (BM25, the model clients),
        # which the dump builds to read what the reranker and the Qwen embedder send a model.
        install += [f"{project}[knowledge]", *pins["reference_texts"].get("install_pins", [])]
        _run(install, "installing the reference release", INSTALL_TIMEOUT)
        out = work / "texts"
        shutil.copy(DUMP_SCRIPT, work / "dump.py")
        shutil.copy(LAYOUT_FILE, work / "layout.json")
        env = dict(os.environ, TAU2_DATA_DIR=str(data_dir), LITELLM_LOCAL_MODEL_COST_MAP="True")
        _run(
            [venv_python, str(work / "dump.py"), str(out)],
            "running the reference texts dump",
            DUMP_TIMEOUT,
            env,
        )
        target = data_dir / TEXTS_DIR
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(out, target)
