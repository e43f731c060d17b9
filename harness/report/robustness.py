"""A robustness run beside a clean run of the same tasks: pass^k under faults and without,
paired over the tasks both finished, with the report's bootstrap intervals (`stats.py`)."""

from __future__ import annotations

from typing import Any

from tau_mcp.harness.metrics import pass_hat_k
from tau_mcp.harness.report.stats import bootstrap_mean, paired_difference


def faults_vs_clean(
    faulted: str,
    clean: str,
    outcomes_faulted: dict[str, list[bool]],
    outcomes_clean: dict[str, list[bool]],
    common: list[str],
) -> dict[str, Any]:
    """Per k (up to the fewest finished trials of a shared task in either run): pass^k of the
    faulted run and of the clean run over the tasks both finished (`common`, in the order the
    comparison pairs them), each with its interval, and their paired difference (faulted minus
    clean) with its interval. Each run's own interval is drawn over its tasks in its own order,
    as the run's section draws it, so both show one interval for one figure."""
    out: dict[str, Any] = {"faulted": faulted, "clean": clean, "tasks": len(common), "pass_hat": {}}
    if not common:
        return out
    shared = set(common)
    max_k = min(min(len(outcomes_faulted[t]), len(outcomes_clean[t])) for t in common)
    for k in range(1, max_k + 1):
        paired = paired_difference(
            [_pass_hat(outcomes_faulted[t], k) for t in common],
            [_pass_hat(outcomes_clean[t], k) for t in common],
        )
        out["pass_hat"][str(k)] = {
            "faulted": _own_interval(outcomes_faulted, shared, k),
            "clean": _own_interval(outcomes_clean, shared, k),
            "difference": paired.difference.as_dict(),
            "significant": paired.significant,
        }
    return out


def _own_interval(outcomes: dict[str, list[bool]], shared: set[str], k: int) -> dict[str, Any]:
    return bootstrap_mean([_pass_hat(v, k) for t, v in outcomes.items() if t in shared]).as_dict()


def _pass_hat(trials: list[bool], k: int) -> float:
    return pass_hat_k(len(trials), sum(trials), k)


def robustness_sentence(comparison: dict[str, Any]) -> str:
    """pass^1 under faults against the clean run's, in one sentence."""
    one = comparison["pass_hat"].get("1")
    if one is None:
        return (
            f"{comparison['faulted']} (faults) and {comparison['clean']} (clean) share no "
            "finished task."
        )
    d = one["difference"]
    beyond = "beyond noise" if one["significant"] else "within noise"
    return (
        f"Under faults pass^1 is {one['faulted']['value']:.1%} against {one['clean']['value']:.1%} "
        f"clean on the same {comparison['tasks']} tasks: {d['value']:+.1%} (95% CI "
        f"{d['ci_low']:+.1%} to {d['ci_high']:+.1%}), {beyond}."
    )
