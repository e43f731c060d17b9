"""Robustness runs (docs/faults.md): which runs and simulations met injected faults, and how
often the agent still earned the reward.

A run is a robustness run when its header records a fault plan (`info.faults`), or when any of
its simulations met a fault (a server that injects faults of its own). Such a run is never a
benchmark run: `submit prepare` refuses it and every report marks it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tau_mcp.harness.metrics import INFRA, is_success

__all__ = ["fault_plan_of", "faults_of", "is_faulted", "recovery", "recovery_line"]


def faults_of(sim: dict[str, Any]) -> list[dict[str, Any]]:
    """The injected faults a simulation's calls met (`info.faults`; [] when none)."""
    info = sim.get("info")
    faults = info.get("faults") if isinstance(info, dict) else None
    return [f for f in faults if isinstance(f, dict)] if isinstance(faults, list) else []


def fault_plan_of(document: dict[str, Any]) -> dict[str, Any] | None:
    """The fault plan a results header records (None: a clean run, or not recorded)."""
    info = document.get("info")
    plan = info.get("faults") if isinstance(info, dict) else None
    return plan if isinstance(plan, dict) else None


def is_faulted(document: dict[str, Any]) -> bool:
    """Whether a results document is a robustness run (a plan, or any simulation's faults)."""
    if fault_plan_of(document) is not None:
        return True
    return any(faults_of(s) for s in document.get("simulations") or [] if isinstance(s, dict))


def _reward(sim: dict[str, Any]) -> float | None:
    return (sim.get("reward_info") or {}).get("reward")


def recovery(simulations: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """How the agent fared under faults: the simulations that met at least one injected fault,
    how many of them still earned reward 1 (the recovery rate), and the same per fault kind
    (a simulation counts under every kind it met). Infrastructure errors are left out."""
    finished = [s for s in simulations if s.get("termination_reason") != INFRA]
    faulted = [(s, faults_of(s)) for s in finished]
    faulted = [(s, f) for s, f in faulted if f]
    by_kind: dict[str, dict[str, Any]] = {}
    for sim, faults in faulted:
        passed = is_success(_reward(sim))
        for fault in faults:
            entry = by_kind.setdefault(
                str(fault.get("kind")), {"faults": 0, "simulations": 0, "recovered": 0}
            )
            entry["faults"] += 1
        for kind in {str(f.get("kind")) for f in faults}:
            by_kind[kind]["simulations"] += 1
            by_kind[kind]["recovered"] += passed
    for entry in by_kind.values():
        entry["recovery_rate"] = entry["recovered"] / entry["simulations"]
    recovered = sum(1 for s, _ in faulted if is_success(_reward(s)))
    clean = [s for s in finished if not faults_of(s)]
    return {
        "simulations": len(finished),
        "faulted_simulations": len(faulted),
        "faults": sum(len(f) for _, f in faulted),
        "recovered": recovered,
        "recovery_rate": recovered / len(faulted) if faulted else None,
        "untouched_success_rate": (
            sum(1 for s in clean if is_success(_reward(s))) / len(clean) if clean else None
        ),
        "by_kind": dict(sorted(by_kind.items())),
    }


def recovery_line(figures: dict[str, Any]) -> str:
    """One sentence: the recovery rate and what it is made of."""
    n, ok = figures["faulted_simulations"], figures["recovered"]
    if not n:
        return (
            f"No simulation met an injected fault ({figures['simulations']} simulations), so "
            "there is no recovery rate."
        )
    return (
        f"Recovery rate {ok / n:.1%}: {ok} of the {n} simulations that met at least one "
        f"injected fault ({figures['faults']} faults in all) still earned reward 1."
    )
