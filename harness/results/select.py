"""Naming simulations of a results file the way every command does (`view --sim`, `fork --sim`)."""

from __future__ import annotations

from typing import Any

from tau_mcp.harness.results.file import ResultsError


def find_simulations(sims: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """An exact simulation id, then an exact task id (every trial), then a unique id prefix;
    a prefix that several ids share is one sentence."""
    exact = [s for s in sims if str(s.get("id")) == key]
    if exact:
        return exact
    by_task = [s for s in sims if str(s.get("task_id")) == key]
    if by_task:
        return sorted(by_task, key=lambda s: int(s.get("trial") or 0))
    prefixed = [s for s in sims if str(s.get("id", "")).startswith(key)]
    if len(prefixed) > 1:
        raise ResultsError(f"'{key}' matches {len(prefixed)} simulation ids; give more of the id")
    return prefixed
