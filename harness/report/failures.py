"""The figures of a report's failures section: failed simulations counted by diagnosis category
and by side, what the LLM reviews found, pass^k with user-simulator-caused failures left out
(a diagnostic, never the score) and what the run's size can tell from noise."""

from __future__ import annotations

from typing import Any

from tau_mcp.grading.diagnosis import CATEGORIES, SIDES, diagnosis_of
from tau_mcp.grading.simulator_flags import FLAGS, empty_turn_retries, flagged
from tau_mcp.harness.metrics import pass_hat_k
from tau_mcp.harness.report.reviews import has_review, review_counts, reviews_cost, user_caused
from tau_mcp.harness.report.stats import (
    bootstrap_mean,
    detectable_difference,
    flip_share,
    icc1,
)

#: A failed simulation graded before diagnoses existed (re-grade it: `tau-harness evaluate`).
UNDIAGNOSED = "undiagnosed"


def failure_breakdown(cells: list[dict[str, Any]], outcome) -> dict[str, Any]:
    """Counts over the simulations that did not pass (failed or infrastructure errors)."""
    by_category = dict.fromkeys(CATEGORIES, 0)
    by_side = dict.fromkeys(SIDES, 0)
    cross: dict[str, dict[str, int]] = {c: dict.fromkeys(SIDES, 0) for c in CATEGORIES}
    undiagnosed = pending = 0
    failed = [s for s in cells if outcome(s) != "pass"]
    for sim in failed:
        found = diagnosis_of(sim)
        if found is None:
            undiagnosed += 1
            continue
        category = found.get("category")
        category = category if category in by_category else "other"
        side = found.get("side")
        side = side if side in by_side else "agent"
        by_category[category] += 1
        by_side[side] += 1
        cross[category][side] += 1
        pending += bool(found.get("user_ended_with_write_pending"))
    return {
        "failed": len(failed),
        "by_category": {k: v for k, v in by_category.items() if v},
        "by_side": by_side,
        "by_category_and_side": {k: v for k, v in cross.items() if by_category[k]},
        UNDIAGNOSED: undiagnosed,
        "user_ended_with_write_pending": pending,
    }


def reviews_summary(cells: list[dict[str, Any]]) -> dict[str, Any] | None:
    """What the reviews saved with the run say, or None when it has none."""
    if not any(has_review(s) for s in cells):
        return None
    counts = review_counts(cells)
    counts["cost"] = reviews_cost(cells)
    return counts


def pass_hat_without_user_caused(
    grid: dict[str, list[dict[str, Any]]], outcome, max_k: int
) -> dict[str, Any] | None:
    """pass^k over the trials left once the failures a full review blames on the user simulator
    are removed; a task keeps a pass^k only while it has k trials left. None without any full
    review. A diagnostic beside the score, never a replacement for it."""
    cells = [s for sims in grid.values() for s in sims]
    if not any(isinstance(s.get("review"), dict) for s in cells):
        return None
    return _pass_hat_without(grid, outcome, max_k, user_caused)


def pass_hat_without_simulator_flags(
    grid: dict[str, list[dict[str, Any]]], outcome, max_k: int
) -> dict[str, Any] | None:
    """pass^k with the failures whose diagnosis flags the simulated user left out
    (grading.simulator_flags), the same way; None when no failure is flagged. A diagnostic."""
    cells = [s for sims in grid.values() for s in sims]
    if not any(outcome(s) == "fail" and flagged(diagnosis_of(s)) for s in cells):
        return None
    return _pass_hat_without(grid, outcome, max_k, lambda sim: flagged(diagnosis_of(sim)))


def simulator_flag_counts(cells: list[dict[str, Any]], outcome) -> dict[str, Any]:
    """How many failed simulations raise each user-simulator flag, and how many empty user
    turns were asked again over the whole run."""
    counts = dict.fromkeys(FLAGS, 0)
    for sim in cells:
        if outcome(sim) != "fail":
            continue
        for name in {
            f.get("flag") for f in (diagnosis_of(sim) or {}).get("user_simulator_flags") or []
        }:
            if name in counts:
                counts[name] += 1
    flagged_failures = sum(1 for s in cells if outcome(s) == "fail" and flagged(diagnosis_of(s)))
    retried = sum(empty_turn_retries(s.get("messages") or []) for s in cells)
    return {"failures_flagged": flagged_failures, "by_flag": counts, "empty_turns_retried": retried}


def _pass_hat_without(grid, outcome, max_k: int, excluded_if) -> dict[str, Any]:
    kept: dict[str, list[bool]] = {}
    excluded = 0
    for task, sims in grid.items():
        trials = []
        for sim in sims:
            if outcome(sim) == "error":
                continue
            if outcome(sim) == "fail" and excluded_if(sim):
                excluded += 1
                continue
            trials.append(outcome(sim) == "pass")
        kept[task] = trials
    values: dict[str, Any] = {}
    for k in range(1, max_k + 1):
        scores = [pass_hat_k(len(t), sum(t), k) for t in kept.values() if len(t) >= k]
        if scores:
            values[str(k)] = {**bootstrap_mean(scores).as_dict(), "tasks": len(scores)}
    return {"excluded": excluded, "pass_hat": values}


def noise(
    finished: dict[str, list[bool]], rewards: dict[str, list[float]] | None = None
) -> dict[str, Any] | None:
    """What the run's size can tell from noise (the smallest pass^1 difference), and how much
    its trials disagree: the share of tasks that flip between trials and the intraclass
    correlation of rewards over tasks (ICC(1), trials as replicas)."""
    tasks = [t for t in finished.values() if t]
    value = detectable_difference(tasks)
    if value is None:
        return None
    trials = sum(len(t) for t in tasks)
    per_task = trials / len(tasks)
    shown = f"{per_task:g}" if per_task == int(per_task) else f"{per_task:.1f} on average"
    trials_word = "trial" if per_task == 1 else "trials"
    flips = flip_share(tasks)
    icc = icc1(list((rewards or {}).values())) if rewards else None
    statement = (
        f"With {len(tasks)} tasks and {shown} {trials_word} each, differences in pass^1 smaller "
        f"than {value * 100:.1f} points cannot be told from noise at 95% (paired over "
        "tasks, against a rerun of the same size)."
    )
    if flips is not None:
        statement += (
            f" {flips[0] * 100:.0f}% of the {flips[1]} tasks with several trials flip between "
            "trials (some pass, some fail)"
            + (
                f"; the intraclass correlation of rewards (ICC(1)) is {icc:.2f}."
                if icc is not None
                else "."
            )
        )
    return {
        "detectable_difference": value,
        "tasks": len(tasks),
        "trials_per_task": per_task,
        "flip_share": flips[0] if flips is not None else None,
        "tasks_with_trials": flips[1] if flips is not None else 0,
        "icc": icc,
        "statement": statement,
    }


def pair_noise(
    rates_a: dict[str, list[bool]], rates_b: dict[str, list[bool]], common: list[str], diff
) -> dict[str, Any] | None:
    value = detectable_difference([rates_a[t] for t in common], [rates_b[t] for t in common])
    if value is None or diff is None:
        return None
    exceeds = abs(diff) > value
    return {
        "detectable_difference": value,
        "exceeds": exceeds,
        "statement": (
            f"The difference, {diff * 100:+.1f} points, "
            f"{'exceeds' if exceeds else 'does not exceed'} the {value * 100:.1f} points these "
            f"two runs ({len(common)} shared tasks) can tell from noise at 95%."
        ),
    }
