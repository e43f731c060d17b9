"""A domain's base-split tasks as the data folder defines them, to compare a run's tasks with.

Results files carry the task definitions they were run on. The reference writes them with every
field (unset ones as null), we write them without the unset ones; both read into our task model
and, with nulls dropped, compare equal exactly when the definitions are the same.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tau_mcp.servers.domains.registry import domain_names, domain_spec
from tau_mcp.servers.engine.data import resolve_data_dir
from tau_mcp.servers.engine.domain import Domain, DomainSpec
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.engine.toolkit import Toolkit


def _without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def normalized_task(raw: dict[str, Any] | Task) -> Any:
    task = raw if isinstance(raw, Task) else Task.model_validate(raw)
    return _without_nulls(task.model_dump(mode="json"))


def _domain(name: str, data_dir: Path) -> Domain:
    """The domain, or (for a domain this tau-mcp cannot serve yet) its task files alone."""
    if name in domain_names():
        return Domain(domain_spec(name), data_dir)
    return Domain(DomainSpec(name=name, db_model=BaseModel, agent_tools=Toolkit), data_dir)


@lru_cache(maxsize=8)
def _base_split(name: str, data_dir: Path) -> dict[str, Any]:
    domain = _domain(name, data_dir)
    return {t: normalized_task(domain.task(t)) for t in domain.task_ids("base")}


def base_split_tasks(domain: str, data_dir: Path | None = None) -> dict[str, Any]:
    """Task id -> normalized definition, for every task of the domain's base split."""
    return _base_split(domain, resolve_data_dir(data_dir))
