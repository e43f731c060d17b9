"""pass^1..4 and cost of one domain's run, as the board recomputes them, to the last bit.

The board's validator recomputes every submitted figure from the trajectories and compares with
`!=`, so "the same number" means the same float. The reference gets its figures from pandas:

- a simulation succeeds when its reward is within 1e-6 of 1; infrastructure errors are dropped;
- each task's pass^k is C(successes, k) / C(trials, k), for k up to the fewest trials any task
  has (and at most the run's `num_trials`);
- the tasks, grouped by id (ids sorted as strings), are then sorted by their number of gold
  actions (-1 for a task whose only action is a transfer) with numpy's default quicksort, which
  is not stable: tasks with equal counts come out in the order numpy's argsort gives;
- the mean over tasks is numpy's pairwise sum divided by the count.

Order and summation both change the last bit (a sequential sum differs on real runs), so this
module calls numpy's own argsort and sum instead of imitating them: the same machine gives the
same bits as the reference. The cost is the mean agent cost over simulations that record one
(None when none does), summed the same way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from tau_mcp.harness.metrics import INFRA, is_success, pass_hat_k

BOARD_KS = (1, 2, 3, 4)


@dataclass(frozen=True)
class DomainScores:
    """One domain's figures: `pass_hat` as fractions (k -> value, only the k the run allows)."""

    domain: str
    pass_hat: dict[int, float]
    cost: float | None
    tasks: int
    simulations: int

    def percent(self, k: int) -> float | None:
        """pass^k in percent, as the submission holds it (None when the run has too few trials)."""
        value = self.pass_hat.get(k)
        return None if value is None else value * 100


def _reward(sim: dict[str, Any]) -> float | None:
    return (sim.get("reward_info") or {}).get("reward")


def gold_action_count(task: dict[str, Any]) -> int:
    """The task's number of gold actions by the agent and the user; -1 for transfer-only tasks."""
    criteria = task.get("evaluation_criteria")
    if not isinstance(criteria, dict):
        raise ValueError(f"task {task.get('id')} has no evaluation criteria to count actions in")
    actions = criteria.get("actions") or []
    if len(actions) == 1 and "transfer" in str(actions[0].get("name", "")).lower():
        return -1
    return sum(1 for a in actions if a.get("requestor", "assistant") in ("assistant", "user"))


def _mean(values: list[float]) -> float:
    """pandas' mean of a float column: numpy's pairwise sum over the column, over the count."""
    import numpy as np

    return float(np.asarray(values, dtype=np.float64).sum()) / len(values)


def mean_order(ids: list[str], tasks: dict[str, dict[str, Any]]) -> list[str]:
    """The task ids (sorted as strings) in the order the reference averages over them."""
    import numpy as np

    counts = np.asarray([gold_action_count(tasks[t]) for t in ids], dtype=np.int64)
    return [ids[i] for i in np.argsort(counts, kind="quicksort")]


def domain_scores(document: dict[str, Any]) -> DomainScores:
    """The board's figures for one results document (a run of one domain)."""
    info = document.get("info") or {}
    domain = str((info.get("environment_info") or {}).get("domain_name"))
    sims = [s for s in document["simulations"] if s.get("termination_reason") != INFRA]
    if not sims:
        return DomainScores(domain, {}, 0.0, 0, 0)
    outcomes: dict[str, list[bool]] = {}
    for sim in sims:
        outcomes.setdefault(str(sim["task_id"]), []).append(is_success(_reward(sim)))
    tasks = {str(t.get("id")): t for t in document.get("tasks") or [] if isinstance(t, dict)}
    ids = sorted(outcomes)
    missing = [t for t in ids if t not in tasks]
    if missing:
        raise ValueError(
            f"the {domain} results have simulations of task(s) missing from their task list: "
            f"{', '.join(missing[:5])}"
        )
    order = mean_order(ids, tasks)
    max_k = min(len(v) for v in outcomes.values())
    if isinstance(info.get("num_trials"), int):
        max_k = min(max_k, info["num_trials"])
    pass_hat = {
        k: _mean([pass_hat_k(len(outcomes[t]), sum(outcomes[t]), k) for t in order])
        for k in range(1, max_k + 1)
    }
    return DomainScores(domain, pass_hat, _cost(sims), len(ids), len(sims))


def _cost(sims: list[dict[str, Any]]) -> float | None:
    """Mean agent cost; simulations without one count as 0 in the sum but not in the count."""
    import numpy as np

    costs = [s.get("agent_cost") for s in sims]
    known = [_is_number(c) for c in costs]
    if not any(known):
        return None
    column = np.asarray([c if k else 0.0 for c, k in zip(costs, known, strict=True)], "float64")
    value = float(column.sum()) / sum(known)
    return None if math.isnan(value) else value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)
