"""How to add an optional extra (`ray`, `gym`, ...) to the tau-mcp this process runs, said the
way it was installed: a hint that names `pip install 'tau-mcp[ray]'` is wrong for a checkout,
a pipx or a `uv tool` install, so the command is built from how the package got here (its
`direct_url.json` and `INSTALLER` records) and the extra's own requirements (its metadata)."""

from __future__ import annotations

import json
import re
import shlex
import sys
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path
from urllib.parse import unquote, urlparse

DIST = "tau-mcp"


def install_command(extra: str) -> str:
    """A shell command that adds `extra`'s packages to this installation."""
    checkout = Path(__file__).resolve().parents[1]
    if (checkout / "pyproject.toml").is_file() and (checkout / "setup.py").is_file():
        # running from a source tree (editable install or sys.path): install it with the extra
        return f"{_python()} -m pip install -e {shlex.quote(f'{checkout}[{extra}]')}"
    try:
        dist = distribution(DIST)
    except PackageNotFoundError:  # modules on sys.path, not installed: this interpreter's pip
        return f"{_python()} -m pip install {shlex.quote(f'{DIST}[{extra}]')}"
    wanted = " ".join(shlex.quote(r) for r in extra_requirements(dist, extra))
    wanted = wanted or shlex.quote(f"{DIST}[{extra}]")
    origin = _direct_url(dist)
    source = _local_path(origin)
    installer = (dist.read_text("INSTALLER") or "").strip()
    prefix = Path(sys.prefix)
    if "pipx" in prefix.parts and "venvs" in prefix.parts:
        return f"pipx inject {DIST} {wanted}"
    if (prefix / "uv-receipt.toml").is_file():  # a `uv tool install` environment
        return f"uv tool install --force --with {wanted} {shlex.quote(source or DIST)}"
    if (origin.get("dir_info") or {}).get("editable") and source:
        return f"{_pip(installer)} -e {shlex.quote(f'{source}[{extra}]')}"
    return f"{_pip(installer)} {wanted}"


def extra_requirements(dist: Distribution, extra: str) -> list[str]:
    """The requirements the metadata lists under `extra` (markers dropped)."""
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    out = []
    for requirement in dist.requires or []:
        spec, _, condition = requirement.partition(";")
        if marker.search(condition):
            out.append(spec.strip().replace(" ", ""))
    return out


def _direct_url(dist: Distribution) -> dict:
    try:
        value = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _local_path(origin: dict) -> str | None:
    url = urlparse(str(origin.get("url") or ""))
    if url.scheme != "file" or "archive_info" in origin:  # a wheel file is no source to reuse
        return None
    return unquote(url.path)


def _python() -> str:
    return shlex.quote(sys.executable or "python")


def _pip(installer: str) -> str:
    if installer == "uv":
        return f"uv pip install --python {_python()}"
    return f"{_python()} -m pip install"
