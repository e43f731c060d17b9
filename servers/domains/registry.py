"""Which domains exist, and loading them against a data folder."""

from __future__ import annotations

import importlib
from pathlib import Path

from servers.engine.data import resolve_data_dir
from servers.engine.domain import Domain, DomainSpec
from servers.engine.errors import UnknownDomain

DOMAIN_NAMES = ("mock", "airline", "retail", "telecom", "banking_knowledge")


def domain_spec(name: str) -> DomainSpec:
    if name not in DOMAIN_NAMES:
        raise UnknownDomain(f"unknown domain '{name}' (known: {', '.join(DOMAIN_NAMES)})")
    module = importlib.import_module(f"servers.domains.{name}")
    return module.SPEC


def load_domains(
    names: list[str] | tuple[str, ...] | None = None, data_dir: str | Path | None = None
) -> dict[str, Domain]:
    """Domains bound to a data folder; unknown names and missing folders fail with one sentence."""
    folder = resolve_data_dir(data_dir)
    wanted = (
        list(names)
        if names
        else [n for n in DOMAIN_NAMES if (folder / "tau2" / "domains" / n).is_dir()]
    )
    return {name: Domain(domain_spec(name), folder) for name in wanted}
