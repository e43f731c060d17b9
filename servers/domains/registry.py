"""Which domains exist, and loading them against a data folder.

Every domain, tau-mcp's own and a team's pack alike, is a declaration found by `discovery.py`
(an entry point of the group `tau_mcp.domains`, installed or in a pack folder of
`$TAU_DOMAIN_PATH`); the module holding its `DomainSpec` is imported the first time the domain
is used (`domain_spec`), never to list names. A name declared twice is settled here: tau-mcp's
own domain keeps its name and the pack claiming it is refused; two packs claiming one name are
both refused (which one was meant cannot be known). A pack that is refused, or fails to import,
costs only its own name: every other domain keeps working.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tau_mcp.servers.domains import discovery
from tau_mcp.servers.domains.discovery import PATH_ENV, RESERVED_NAMES, Declaration
from tau_mcp.servers.engine.data import resolve_data_dir
from tau_mcp.servers.engine.domain import Domain, DomainSpec
from tau_mcp.servers.engine.errors import DataError, DomainPackError, UnknownDomain

__all__ = [
    "PATH_ENV",
    "RESERVED_NAMES",
    "Catalog",
    "DomainStatus",
    "add_domain_paths",
    "catalog",
    "declaration",
    "domain_names",
    "domain_spec",
    "has_data",
    "load_domains",
    "problems",
    "refresh",
    "refusals",
    "statuses",
]


@dataclass
class Catalog:
    """The declared domains, settled: the usable ones by name, and the refused ones."""

    #: name -> its declaration, for every name that can be used, in name order.
    usable: dict[str, Declaration] = field(default_factory=dict)
    #: name -> why the name cannot be used (claimed by two packs).
    blocked: dict[str, str] = field(default_factory=dict)
    #: name -> why each pack claiming it was refused while the name stays usable (a pack
    #: named like one of ours): its own sentence, naming both sides.
    refused: dict[str, list[str]] = field(default_factory=dict)
    #: One sentence for each declaration refused and each pack folder that cannot be read.
    problems: list[str] = field(default_factory=list)

    def refuse(self, name: str, sentence: str) -> None:
        self.refused.setdefault(name, []).append(sentence)
        self.problems.append(sentence)


def _settle(declarations: list[Declaration], folder_problems: list[str]) -> Catalog:
    result = Catalog(problems=list(folder_problems))
    claims: dict[str, list[Declaration]] = {}
    for found in declarations:
        why = discovery.name_problem(found.name) or discovery.target_problem(found.target)
        if why is not None:
            result.refuse(found.name, f"{found.describe()} is refused: {why}")
            continue
        same = claims.setdefault(found.name, [])
        if not any(d.target == found.target for d in same):  # one pack found twice is one
            same.append(found)
    for name in sorted(claims):
        own = [d for d in claims[name] if d.builtin]
        others = [d for d in claims[name] if not d.builtin]
        if own:
            result.usable[name] = own[0]
            for other in others:
                result.refuse(
                    name,
                    f"{other.describe()} is refused: tau-mcp's own domain '{name}' has that "
                    "name (rename the pack)",
                )
        elif len(others) == 1:
            result.usable[name] = others[0]
        else:
            first, second = others[0], others[1]
            sentence = (
                f"domain '{name}' is declared by two packs, {first.origin} ({first.target}) and "
                f"{second.origin} ({second.target}), so neither is used (rename one)"
            )
            result.blocked[name] = sentence  # using the name says it: no warning too
            result.problems.append(sentence)
    return result


_lock = threading.RLock()
_installed: list[Declaration] | None = None
_catalogs: dict[str, Catalog] = {}
_specs: dict[tuple[str, str], DomainSpec | DomainPackError] = {}


def catalog() -> Catalog:
    """The settled declarations: installed ones (read once per process) and those of the pack
    folders `$TAU_DOMAIN_PATH` names now."""
    global _installed
    paths = os.environ.get(PATH_ENV, "")
    with _lock:
        known = _catalogs.get(paths)
        if known is None:
            if _installed is None:
                _installed = discovery.installed()
            folders, folder_problems = discovery.in_folders(discovery.search_paths(paths))
            known = _catalogs[paths] = _settle([*_installed, *folders], folder_problems)
        return known


def refresh() -> None:
    """Forget what was discovered (a distribution installed since, say); imported specs stay."""
    global _installed
    with _lock:
        _installed = None
        _catalogs.clear()


def add_domain_paths(paths: Iterable[str | os.PathLike]) -> None:
    """Put pack folders (`--domain-path DIR`) ahead of `$TAU_DOMAIN_PATH`. They are added to
    the variable itself, so the processes this one starts (worker processes, a local Ray
    instance's workers, agent programs, servers) find the same packs."""
    given = list(dict.fromkeys(str(Path(p).expanduser().resolve()) for p in paths))
    if not given:
        return
    current = [part for part in os.environ.get(PATH_ENV, "").split(os.pathsep) if part]
    merged = [*given, *(part for part in current if part not in given)]
    os.environ[PATH_ENV] = os.pathsep.join(merged)


def domain_names() -> tuple[str, ...]:
    """Every domain that can be used, in name order (nothing is imported)."""
    return tuple(catalog().usable)


def problems() -> list[str]:
    """One sentence for each pack refused and each pack folder that cannot be read."""
    return list(catalog().problems)


def refusals(name: str) -> list[str]:
    """Why packs claiming `name` were refused (a pack named like one of tau-mcp's domains, say):
    worth a warning where the name is used."""
    return list(catalog().refused.get(name, ()))


def declaration(name: str) -> Declaration:
    """The declaration of a usable domain (UnknownDomain, or DomainPackError for a name two
    packs claim)."""
    known = catalog()
    found = known.usable.get(name)
    if found is not None:
        return found
    if name in known.blocked:
        raise DomainPackError(known.blocked[name])
    raise UnknownDomain(
        f"unknown domain '{name}' (known: {', '.join(known.usable) or 'none'}; a pack that is "
        "not installed is found with --domain-path DIR or $TAU_DOMAIN_PATH)"
    )


def domain_spec(name: str) -> DomainSpec:
    """The domain's spec, its pack imported the first time (DomainPackError, in one sentence
    naming the pack, when that fails or it declares no valid spec)."""
    found = declaration(name)
    key = (name, found.target)
    with _lock:
        known = _specs.get(key)
        if known is None:
            known = _specs[key] = _import_spec(found)
    if isinstance(known, DomainPackError):
        raise known
    return known


def _import_spec(found: Declaration) -> DomainSpec | DomainPackError:
    """The spec a declaration names, or the error saying why it cannot be had."""
    if found.import_root is not None and str(found.import_root) not in sys.path:
        sys.path.append(str(found.import_root))
    try:
        module = importlib.import_module(found.module)
        value = getattr(module, found.attribute)
    except Exception as exc:  # noqa: BLE001 - a broken pack costs its own name, nothing else
        return DomainPackError(
            f"{found.describe()} fails to load: {type(exc).__name__}: {_first_line(exc)}"
        )
    if not isinstance(value, DomainSpec):
        return DomainPackError(
            f"{found.describe()} fails to load: {found.target} is a {type(value).__name__}, "
            "not a DomainSpec"
        )
    if value.name != found.name:
        return DomainPackError(
            f"{found.describe()} fails to load: {found.target} is named '{value.name}' "
            "(the entry point's name and the spec's must agree)"
        )
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or repr(exc)
    return text.splitlines()[0]


@dataclass(frozen=True)
class DomainStatus:
    """One usable domain name as `tau-harness domains` shows it."""

    name: str
    #: Where it is declared: "tau-mcp", an installed distribution, a pack folder.
    origin: str
    builtin: bool
    #: Its data folder, when the data is there (None: not here, see `problem` or `no_data`).
    folder: Path | None
    #: Why there is no data folder here (a root that is not set, a folder that is missing).
    no_data: str | None
    #: Why the domain cannot be used at all (its pack fails to load): one sentence.
    problem: str | None


def statuses(data_dir: str | Path | None = None) -> list[DomainStatus]:
    """Every usable name, its pack imported, with where its data is (for a listing)."""
    folder = resolve_data_dir(data_dir)
    out = []
    for name, found in catalog().usable.items():
        where: Path | None = None
        no_data = problem = None
        try:
            where = domain_spec(name).folder(folder)
            if not where.is_dir():
                no_data, where = f"no folder {where}", None
        except DomainPackError as exc:
            problem = str(exc)
        except DataError as exc:
            no_data = str(exc)
        out.append(DomainStatus(name, found.origin, found.builtin, where, no_data, problem))
    return out


def has_data(name: str, data_dir: Path) -> bool:
    """Is this domain's data where it says it lives (for most, the data folder given)?"""
    try:
        return domain_spec(name).folder(data_dir).is_dir()
    except DataError:
        return False


def load_domains(
    names: list[str] | tuple[str, ...] | None = None,
    data_dir: str | Path | None = None,
    task_set: str | None = None,
) -> dict[str, Domain]:
    """Domains bound to a data folder (and to a named task set, see servers/engine/domain.py);
    unknown names, broken packs, task sets and missing folders fail with one sentence. With no
    names: every domain whose data is there."""
    folder = resolve_data_dir(data_dir)
    wanted = list(names) if names else [n for n in domain_names() if has_data(n, folder)]
    return {name: Domain(domain_spec(name), folder, task_set) for name in wanted}
