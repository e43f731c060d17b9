"""Writing a new domain pack: the names it takes, the checks on them, the files from the template.

The template (`template/`, shipped as package data) holds the pack's files with `.tmpl` added
to their names (so no tool takes them for tau-mcp's own code) and `__module__` standing for the
pack's Python package. Placeholders: `{{name}}` the domain's name, `{{module}}` its package,
`{{dist}}` its distribution, `{{Class}}` the prefix of its class names, `{{title}}` its name for
people. The pack is written to a temporary folder beside the target and moved into place, so a
failure leaves nothing half-written.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tau_mcp.servers.domains import discovery

TEMPLATE = Path(__file__).resolve().parent / "template"
SUFFIX = ".tmpl"
MODULE_DIR = "__module__"


class ScaffoldError(ValueError):
    """A name or folder `domain new` cannot use: one sentence."""


@dataclass(frozen=True)
class PackNames:
    """The names one domain pack uses."""

    name: str

    @property
    def module(self) -> str:
        return f"{self.name.lower().replace('-', '_')}_domain"

    @property
    def dist(self) -> str:
        return f"{self.name.lower().replace('_', '-')}-domain"

    @property
    def class_prefix(self) -> str:
        return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]+", self.name))

    @property
    def title(self) -> str:
        return " ".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]+", self.name))

    def fill(self, text: str) -> str:
        for key, value in (
            ("{{name}}", self.name),
            ("{{module}}", self.module),
            ("{{dist}}", self.dist),
            ("{{Class}}", self.class_prefix),
            ("{{title}}", self.title),
        ):
            text = text.replace(key, value)
        return text


def check_name(name: str) -> PackNames:
    """The pack's names, once `name` can be a new domain's (ScaffoldError otherwise)."""
    from tau_mcp.servers.domains import registry

    problem = discovery.name_problem(name)
    if problem is not None:
        raise ScaffoldError(problem)
    known = registry.catalog()
    taken = known.usable.get(name)
    if taken is not None:
        raise ScaffoldError(f"a domain named '{name}' exists already ({taken.describe()})")
    if name in known.blocked:
        raise ScaffoldError(f"the name '{name}' is taken: {known.blocked[name]}")
    names = PackNames(name)
    if importlib.util.find_spec(names.module) is not None:
        raise ScaffoldError(
            f"a Python module named {names.module} is installed already; choose another name"
        )
    return names


def check_target(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise ScaffoldError(f"{folder} is a file; give --dir a new or empty folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise ScaffoldError(f"{folder} exists and is not empty; give --dir a new or empty folder")


def template_files() -> list[Path]:
    return sorted(p for p in TEMPLATE.rglob(f"*{SUFFIX}") if p.is_file())


def write_pack(name: str, folder: Path) -> list[Path]:
    """Write the pack for domain `name` into `folder` (new or empty); the files written."""
    names = check_name(name)
    folder = folder.expanduser().resolve()
    check_target(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        written = []
        for source in template_files():
            relative = source.relative_to(TEMPLATE).as_posix().removesuffix(SUFFIX)
            relative = relative.replace(MODULE_DIR, names.module)
            target = staging / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(names.fill(source.read_text(encoding="utf-8")), encoding="utf-8")
            written.append(folder / relative)
        if folder.is_dir():
            folder.rmdir()  # empty (checked): the staged pack takes its place
        staging.rename(folder)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return written
