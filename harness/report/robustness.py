"""A robustness run beside a clean run of the same tasks: pass^k under faults and without,
paired over the tasks both finished, with the report's bootstrap intervals (`stats.py`)."""

from __future__ import annotations

from typing import Any

from tau_mcp.harness.metrics import pass_hat_k
from tau_mcp.harness.report.stats import bootstrap_mean, paired_difference


def faults_vs_clean(
    faulted: str, clean: str, outcomes_faulted: dict[str, list[bool]], outcomes_clean: dict
) -> dict[str, Any]:
    """Per k (up to the fewest finished trials of a shared task in either run): pass^k of the
    faulted run and of the clean run over the tasks both finished, each with its interval,
    and their paired difference (faulted minus clean) with its interval."""
    common = sorted(set(outcomes_faulted) & set(outcomes_clean))
    out: dict[str, Any] = {"faulted": faulted, "clean": clean, "tasks": len(common), "pass_hat": {}}
    if not common:
        return out
    max_k = min(min(len(outcomes_faulted[t]), len(outcomes_clean[t])) for t in common)
    for k in range(1, max_k + 1):
        under = [_pass_hat(outcomes_faulted[t], k) for t in common]
        without = [_pass_hat(outcomes_clean[t], k) for t in common]
        paired = paired_difference(under, without)
        out["pass_hat"][str(k)] = {
            "faulted": bootstrap_mean(under).as_dict(),
            "clean": bootstrap_mean(without).as_dict(),
            "difference": paired.difference.as_dict(),
            "significant": paired.significant,
        }
    return out


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
