"""Two runs that differ only by their NL judge: how far the judges agree.

Two results files hold the same conversations (`tau-harness evaluate` re-grades a run with
another judge, keeping each simulation's id and trajectory) when every setting but the judge is
the same and their paired simulations carry the same messages. Their NL-assertion verdicts are
then two raters' verdicts on the same items: Cohen's kappa over the assertions both judged, and
how many simulations' rewards (and pass/fail outcomes) the other judge changed.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.harness.metrics import INFRA, is_success
from tau_mcp.harness.report.stats import cohen_kappa

#: Header settings (report.summary.settings_of) that must be equal; the judge may differ.
SAME_SETTINGS = (
    "domain",
    "agent",
    "agent_llm",
    "agent_llm_args",
    "user",
    "user_llm",
    "user_llm_args",
    "num_trials",
    "max_steps",
    "max_errors",
    "seed",
)
_MESSAGE_VOLATILE = ("timestamp", "turn_idx")


def _trajectory(sim: dict[str, Any]) -> list[Any]:
    return [
        {k: v for k, v in m.items() if k not in _MESSAGE_VOLATILE} if isinstance(m, dict) else m
        for m in sim.get("messages") or []
    ]


def _key(sim: dict[str, Any]) -> tuple[str, int]:
    return str(sim.get("task_id")), int(sim.get("trial") or 0)


def paired_simulations(sims_a: list[dict], sims_b: list[dict]) -> list[tuple[dict, dict]] | None:
    """The simulations of A and B paired by task and trial, or None when a pair's
    conversations differ (then the runs differ by more than their judge)."""
    by_key = {_key(s): s for s in sims_b if s.get("termination_reason") != INFRA}
    pairs = []
    for sim in sims_a:
        other = by_key.get(_key(sim))
        if other is None or sim.get("termination_reason") == INFRA:
            continue
        if _trajectory(sim) != _trajectory(other):
            return None
        pairs.append((sim, other))
    return pairs


def _verdicts(sim: dict[str, Any]) -> list[tuple[str, bool]]:
    checks = (sim.get("reward_info") or {}).get("nl_assertions") or []
    return [(str(c.get("nl_assertion")), bool(c.get("met"))) for c in checks if isinstance(c, dict)]


def _judge(settings: dict[str, Any]) -> str:
    return str(settings.get("judge_llm") or "no judge")


def judge_agreement(
    settings_a: dict[str, Any],
    settings_b: dict[str, Any],
    sims_a: list[dict[str, Any]],
    sims_b: list[dict[str, Any]],
) -> dict[str, Any] | None:
    """The two judges' agreement, or None when the runs differ by more than their judge (or
    share no judged assertion)."""
    if any(settings_a.get(k) != settings_b.get(k) for k in SAME_SETTINGS):
        return None
    pairs = paired_simulations(sims_a, sims_b)
    if not pairs:
        return None
    verdicts: list[tuple[bool, bool]] = []
    rewards_changed = outcomes_flipped = 0
    for a, b in pairs:
        left, right = _verdicts(a), _verdicts(b)
        if len(left) == len(right) and [s for s, _ in left] == [s for s, _ in right]:
            verdicts += [(x, y) for (_, x), (_, y) in zip(left, right, strict=True)]
        reward_a = (a.get("reward_info") or {}).get("reward")
        reward_b = (b.get("reward_info") or {}).get("reward")
        if reward_a != reward_b:
            rewards_changed += 1
        if is_success(reward_a) != is_success(reward_b):
            outcomes_flipped += 1
    if not verdicts:
        return None
    kappa = cohen_kappa(verdicts)
    agree = sum(1 for x, y in verdicts if x == y)
    table = {
        "both_met": sum(1 for x, y in verdicts if x and y),
        "only_a_met": sum(1 for x, y in verdicts if x and not y),
        "only_b_met": sum(1 for x, y in verdicts if y and not x),
        "neither_met": sum(1 for x, y in verdicts if not x and not y),
    }
    judge_a, judge_b = _judge(settings_a), _judge(settings_b)
    return {
        "judge_a": judge_a,
        "judge_b": judge_b,
        "simulations": len(pairs),
        "assertions": len(verdicts),
        "agree": agree,
        "kappa": kappa,
        "verdicts": table,
        "rewards_changed": rewards_changed,
        "outcomes_flipped": outcomes_flipped,
        "statement": (
            f"Same conversations, judged by {judge_a} and {judge_b}: they agree on {agree} of "
            f"{len(verdicts)} NL assertions (Cohen's kappa {kappa:.2f}); the second judge "
            f"changed the reward of {rewards_changed} of {len(pairs)} simulations "
            f"({outcomes_flipped} flipped between pass and fail)."
        ),
    }
