"""Run summaries: pass^k as the reference computes it, average reward, DB matches, costs."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tau_mcp.harness.results import INFRA, SimulationRecord

__all__ = ["INFRA", "Summary", "is_success", "pass_hat_k", "summarize"]


def is_success(reward: float | None) -> bool:
    return reward is not None and abs(reward - 1.0) <= 1e-6


def pass_hat_k(trials: int, successes: int, k: int) -> float:
    """Chance that k trials drawn without replacement all succeed."""
    if trials < k:
        raise ValueError(f"{trials} trials cannot give pass^{k}")
    return math.comb(successes, k) / math.comb(trials, k)


@dataclass
class Summary:
    simulations: int = 0
    tasks: int = 0
    infra_errors: int = 0
    avg_reward: float = 0.0
    pass_hat: dict[int, float] = field(default_factory=dict)
    db_checked: int = 0
    db_matches: int = 0
    avg_agent_cost: float | None = None
    avg_user_cost: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    avg_duration: float = 0.0
    terminations: dict[str, int] = field(default_factory=dict)

    @property
    def db_match_rate(self) -> float | None:
        return self.db_matches / self.db_checked if self.db_checked else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "simulations": self.simulations,
            "tasks": self.tasks,
            "infra_errors": self.infra_errors,
            "avg_reward": self.avg_reward,
            **{f"pass_hat_{k}": v for k, v in self.pass_hat.items()},
            "db_match_rate": self.db_match_rate,
            "avg_agent_cost": self.avg_agent_cost,
            "avg_user_cost": self.avg_user_cost,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "avg_duration": self.avg_duration,
            "terminations": self.terminations,
        }


def summarize(simulations: Sequence[SimulationRecord | dict[str, Any]]) -> Summary:
    """Infrastructure failures are counted but kept out of every other figure. Simulations are
    records, or dicts as a results file holds them (checked by `load_results`)."""
    every = [
        s if isinstance(s, SimulationRecord) else SimulationRecord.trusted(s) for s in simulations
    ]
    summary = Summary(infra_errors=sum(1 for r in every if r.infrastructure_error))
    sims = [r for r in every if not r.infrastructure_error]
    if not sims:
        return summary
    summary.simulations = len(sims)
    by_task: dict[str, list[bool]] = defaultdict(list)
    for sim in sims:
        by_task[str(sim.task_id)].append(is_success(sim.reward or 0.0))
        reason = str(sim.termination_reason)
        summary.terminations[reason] = summary.terminations.get(reason, 0) + 1
        db = (sim.reward_info or {}).get("db_check")
        if db is not None:
            summary.db_checked += 1
            summary.db_matches += bool(db.get("db_match"))
        for message in sim.messages or []:
            usage = message.get("usage") or {}
            summary.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            summary.completion_tokens += int(usage.get("completion_tokens") or 0)
    summary.tasks = len(by_task)
    summary.avg_reward = sum(float(s.reward or 0.0) for s in sims) / len(sims)
    max_k = min(len(v) for v in by_task.values())
    for k in range(1, max_k + 1):
        summary.pass_hat[k] = sum(pass_hat_k(len(v), sum(v), k) for v in by_task.values()) / len(
            by_task
        )
    agent_costs = [s.agent_cost for s in sims if s.agent_cost is not None]
    user_costs = [s.user_cost for s in sims if s.user_cost is not None]
    summary.avg_agent_cost = sum(agent_costs) / len(agent_costs) if agent_costs else None
    summary.avg_user_cost = sum(user_costs) / len(user_costs) if user_costs else None
    summary.avg_duration = sum(float(s.duration or 0.0) for s in sims) / len(sims)
    return summary
