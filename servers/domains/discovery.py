"""Where domains are declared: installed distributions and pack folders, read without importing.

A domain is declared by one line, `NAME = "module:attribute"`, in the entry-point group
`tau_mcp.domains`: the entry point's name is the domain's name, its value the `DomainSpec`.
tau-mcp declares its own domains that way in its pyproject.toml; a pack (a team's own domain)
declares its own in its pyproject.toml, and is found either installed (`pip install`: its
distribution's entry points) or as a folder given with `--domain-path DIR` or `$TAU_DOMAIN_PATH`
(os.pathsep-separated), whose pyproject.toml is read for the same group: DIR is a pack's folder,
or a folder of pack folders. Nothing here imports a pack: names come from metadata alone, so
listing names stays cheap (`registry.py` imports a pack when its domain is used).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from importlib.metadata import Distribution, entry_points
from pathlib import Path

ENTRY_POINT_GROUP = "tau_mcp.domains"
PATH_ENV = "TAU_DOMAIN_PATH"
OWN_DISTRIBUTION = "tau-mcp"

#: What a domain may be called: it is part of URLs (`/{domain}/agent/mcp`) and file names.
NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}\Z")
#: Words no domain may be called: the actions of `tau-harness domain` (its first argument names
#: an action when it is one of these, else a domain).
RESERVED_NAMES = frozenset({"show", "check", "new"})


@dataclass(frozen=True)
class Declaration:
    """One declared domain: its name, the spec's `module:attribute`, and where it was found."""

    name: str
    target: str
    #: Where the declaration was found, as a sentence names it.
    origin: str
    #: Declared by tau-mcp itself.
    builtin: bool = False
    #: A pack folder's import root (put on `sys.path` to import it); None: already importable.
    import_root: Path | None = None

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]

    @property
    def attribute(self) -> str:
        return self.target.partition(":")[2]

    def describe(self) -> str:
        return f"domain '{self.name}' of {self.origin}"


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a domain's name (None: it can)."""
    if name in RESERVED_NAMES:
        return f"'{name}' is reserved for `tau-harness domain {name}`"
    if not NAME_PATTERN.match(name):
        return (
            f"'{name}' is not a domain name (a letter, then letters, digits, '-' or '_'; at "
            "most 64 characters)"
        )
    return None


def target_problem(target: str) -> str | None:
    """Why an entry point's value cannot name a spec (None: it can)."""
    module, sep, attribute = target.partition(":")
    dotted = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")
    if not sep or not dotted.match(module.strip()) or not dotted.match(attribute.strip()):
        return f"'{target}' does not name a spec as module:attribute"
    return None


# --- installed distributions ------------------------------------------------------------------
def installed() -> list[Declaration]:
    """The group's entry points of every installed distribution (tau-mcp's own are built-in)."""
    found: list[Declaration] = []
    origins: dict[int, str] = {}  # a distribution's entry points share its object
    for point in entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(point, "dist", None)
        origin = origins.get(id(dist))
        if origin is None:
            origin = origins[id(dist)] = _origin(dist)
        value = point.value.replace(" ", "")
        found.append(Declaration(point.name, value, origin, origin == OWN_DISTRIBUTION))
    if not any(d.builtin for d in found):
        found += _own_from_checkout()
    return found


def _origin(dist: Distribution | None) -> str:
    """`tau-mcp` for tau-mcp itself, else the distribution's name and version. The name comes
    from the metadata folder's name where it can (reading METADATA costs a few ms each)."""
    if dist is None:
        return "an installed distribution"
    quick = getattr(dist, "_normalized_name", None)  # from the folder name (CPython 3.10+)
    name = quick if isinstance(quick, str) else dist.name
    if _normalized(name) == OWN_DISTRIBUTION:
        return OWN_DISTRIBUTION
    return f"the installed distribution {dist.name} {dist.version}"


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _own_from_checkout() -> list[Declaration]:
    """tau-mcp's own declarations read from its pyproject.toml, when its installed metadata
    has none: a checkout used without installing, or an install older than the declarations
    (the metadata is written when tau-mcp is installed)."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared, _ = _declared_in(pyproject)
    return [Declaration(n, t, OWN_DISTRIBUTION, True) for n, t in declared.items()]


# --- pack folders -----------------------------------------------------------------------------
def search_paths(raw: str | None = None) -> list[Path]:
    """The folders `$TAU_DOMAIN_PATH` names, in order (empty entries left out)."""
    raw = os.environ.get(PATH_ENV, "") if raw is None else raw
    return [Path(part).expanduser() for part in raw.split(os.pathsep) if part.strip()]


def in_folders(paths: list[Path]) -> tuple[list[Declaration], list[str]]:
    """The declarations of the packs in these folders (each a pack's folder, or a folder of
    them), and one sentence for each folder that holds none or cannot be read."""
    found: list[Declaration] = []
    problems: list[str] = []
    for path in paths:
        folder = path.resolve()
        if not folder.is_dir():
            problems.append(f"domain path {path} is not a folder")
            continue
        packs = [folder] if (folder / "pyproject.toml").is_file() else _pack_folders(folder)
        if not packs:
            problems.append(
                f"domain path {folder} holds no domain pack (a folder whose pyproject.toml "
                f'declares [project.entry-points."{ENTRY_POINT_GROUP}"], or a folder of them)'
            )
        for pack in packs:
            declared, problem = _declared_in(pack / "pyproject.toml")
            if problem is not None:
                problems.append(problem)
            elif not declared:
                problems.append(
                    f"the pack folder {pack} declares no domain (its pyproject.toml has no "
                    f'[project.entry-points."{ENTRY_POINT_GROUP}"] table)'
                )
            root = pack / "src" if (pack / "src").is_dir() else pack
            origin = f"the pack folder {pack}"
            found += [Declaration(n, t, origin, import_root=root) for n, t in declared.items()]
    return found, problems


def _pack_folders(folder: Path) -> list[Path]:
    try:
        children = sorted(p for p in folder.iterdir() if (p / "pyproject.toml").is_file())
    except OSError:
        return []
    return children


def _declared_in(pyproject: Path) -> tuple[dict[str, str], str | None]:
    """The group's table of a pyproject.toml: name -> `module:attribute`, or a sentence."""
    try:
        with pyproject.open("rb") as fh:
            document = tomllib.load(fh)
    except FileNotFoundError:
        return {}, None
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return {}, f"cannot read {pyproject}: {exc}"
    table = document.get("project", {}).get("entry-points", {}).get(ENTRY_POINT_GROUP, {})
    if not isinstance(table, dict):
        return {}, f"{pyproject}: entry-points.{ENTRY_POINT_GROUP} is not a table"
    return {str(k): str(v).replace(" ", "") for k, v in table.items()}, None
