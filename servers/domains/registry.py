"""Which domains exist, and loading them against a data folder."""

from __future__ import annotations

import importlib
from pathlib import Path

from tau_mcp.servers.engine.data import resolve_data_dir
from tau_mcp.servers.engine.domain import Domain, DomainSpec
from tau_mcp.servers.engine.errors import DataError, UnknownDomain

DOMAIN_NAMES = (
    "mock",
    "airline",
    "retail",
    "telecom",
    "telecom-workflow",
    "banking_knowledge",
)


def domain_spec(name: str) -> DomainSpec:
    if name not in DOMAIN_NAMES:
        raise UnknownDomain(f"unknown domain '{name}' (known: {', '.join(DOMAIN_NAMES)})")
    # A domain's package is its name as a Python identifier (telecom-workflow: telecom_workflow).
    module = importlib.import_module(f"tau_mcp.servers.domains.{name.replace('-', '_')}")
    return module.SPEC


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
    unknown names, task sets and missing folders fail with one sentence."""
    folder = resolve_data_dir(data_dir)
    wanted = list(names) if names else [n for n in DOMAIN_NAMES if has_data(n, folder)]
    return {name: Domain(domain_spec(name), folder, task_set) for name in wanted}
