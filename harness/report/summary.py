"""The numbers of a report: per run (pass^k with intervals, costs, endings, a task x trial grid)
and per pair of runs over the same tasks (paired difference, flips, verdict).

Every output format (HTML, Markdown, JSON, the console) renders this one structure, so they can
never disagree on a figure.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

from tau_mcp.grading.diagnosis import diagnosis_of
from tau_mcp.grading.review import review_cost
from tau_mcp.harness.metrics import INFRA, is_success, pass_hat_k, summarize
from tau_mcp.harness.report.failures import (
    failure_breakdown,
    noise,
    pair_noise,
    pass_hat_without_user_caused,
    reviews_summary,
)
from tau_mcp.harness.report.reviews import review_digest
from tau_mcp.harness.report.stats import bootstrap_mean, mcnemar_test, paired_difference
from tau_mcp.servers.domains.registry import domain_spec
from tau_mcp.servers.engine.errors import UnknownDomain

PASS, FAIL, ERROR = "pass", "fail", "error"


def _reward(sim: dict[str, Any]) -> float:
    return float((sim.get("reward_info") or {}).get("reward") or 0.0)


def outcome(sim: dict[str, Any]) -> str:
    if sim.get("termination_reason") == INFRA:
        return ERROR
    return PASS if is_success(_reward(sim)) else FAIL


def judge_cost(sim: dict[str, Any]) -> float | None:
    """What the NL judge cost for this simulation, when it was asked at all."""
    info = (sim.get("reward_info") or {}).get("info") or {}
    if not isinstance(info, dict) or "judge" not in info:
        return None
    return float(info.get("cost") or 0.0)


@cache
def has_retrieval_configs(domain: str | None) -> bool:
    """Does this domain run under a retrieval config (banking_knowledge)? False for a domain
    tau-mcp does not know."""
    try:
        return domain is not None and domain_spec(domain).variants is not None
    except (UnknownDomain, ImportError):
        return False


def retrieval_of(info: dict[str, Any], domain: str | None) -> str | None:
    """The retrieval config a run used, as people read it (`bm25 top_k=5`): its name and
    options; "not recorded" for a domain that has them when the file does not say; None for
    a domain without them."""
    name = info.get("retrieval_config")
    if not name:
        return "not recorded" if has_retrieval_configs(domain) else None
    options = info.get("retrieval_config_kwargs") or {}
    shown = (v if isinstance(v, str) else json.dumps(v) for v in options.values())
    return " ".join([str(name), *(f"{k}={v}" for k, v in zip(options, shown, strict=True))])


def settings_of(document: dict[str, Any]) -> dict[str, Any]:
    info = document.get("info") or {}
    agent, user = info.get("agent_info") or {}, info.get("user_info") or {}
    domain = (info.get("environment_info") or {}).get("domain_name")
    return {
        "domain": domain,
        "agent": agent.get("implementation"),
        "agent_llm": agent.get("llm"),
        "agent_llm_args": agent.get("llm_args"),
        "user": user.get("implementation"),
        "user_llm": user.get("llm"),
        "user_llm_args": user.get("llm_args"),
        "judge_llm": info.get("judge_llm"),
        "num_trials": info.get("num_trials"),
        "max_steps": info.get("max_steps"),
        "max_errors": info.get("max_errors"),
        "seed": info.get("seed"),
        "git_commit": info.get("git_commit"),
        "retrieval_config": info.get("retrieval_config"),
        "retrieval_config_kwargs": info.get("retrieval_config_kwargs"),
        "retrieval": retrieval_of(info, domain),
    }


def _label(settings: dict[str, Any], path: Path) -> str:
    """How every format names a run; a run under a retrieval config is named with it, since
    the config changes the agent's tools and so what the score means."""
    who = settings.get("agent_llm") or settings.get("agent") or "run"
    retrieval = settings.get("retrieval")
    return f"{who} ({path.stem}; retrieval {retrieval})" if retrieval else f"{who} ({path.stem})"


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def task_grid(simulations: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per task, its simulations ordered by trial (a retried infrastructure failure that later
    finished is superseded by the finished one)."""
    cells: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    for sim in simulations:
        task, trial = str(sim.get("task_id")), int(sim.get("trial") or 0)
        old = cells[task].get(trial)
        if old is None or outcome(old) == ERROR:
            cells[task][trial] = sim
    return {task: [by[t] for t in sorted(by)] for task, by in cells.items()}


def task_outcomes(simulations: list[dict[str, Any]]) -> dict[str, list[bool]]:
    """Per task with a finished trial, whether each finished trial succeeded."""
    out: dict[str, list[bool]] = {}
    for task, sims in task_grid(simulations).items():
        finished = [outcome(s) == PASS for s in sims if outcome(s) != ERROR]
        if finished:
            out[task] = finished
    return out


def task_success_rates(simulations: list[dict[str, Any]]) -> dict[str, float]:
    """Per task, the share of its finished trials that succeeded (infrastructure errors left out)."""
    return {task: sum(v) / len(v) for task, v in task_outcomes(simulations).items()}


def run_summary(path: Path, document: dict[str, Any]) -> dict[str, Any]:
    sims = document["simulations"]
    settings = settings_of(document)
    base = summarize(sims)
    grid = task_grid(sims)
    finished = {
        task: [outcome(s) == PASS for s in cell if outcome(s) != ERROR]
        for task, cell in grid.items()
    }
    finished = {t: v for t, v in finished.items() if v}
    pass_hat: dict[str, Any] = {}
    max_k = 0
    if finished:
        max_k = min(len(v) for v in finished.values())
        for k in range(1, max_k + 1):
            scores = [pass_hat_k(len(v), sum(v), k) for v in finished.values()]
            pass_hat[str(k)] = bootstrap_mean(scores).as_dict()
    rewards_by_task: dict[str, list[float]] = defaultdict(list)
    for sim in sims:
        if outcome(sim) != ERROR:
            rewards_by_task[str(sim.get("task_id"))].append(_reward(sim))
    avg_reward = (
        bootstrap_mean([sum(v) / len(v) for v in rewards_by_task.values()]).as_dict()
        if rewards_by_task
        else None
    )
    done = [s for s in sims if outcome(s) != ERROR]
    costs = {
        "agent": [float(s["agent_cost"]) for s in done if s.get("agent_cost") is not None],
        "user": [float(s["user_cost"]) for s in done if s.get("user_cost") is not None],
        "judge": [c for s in done if (c := judge_cost(s)) is not None],
    }
    cost = {
        part: {"total": sum(values) if values else None, "per_simulation": _mean(values)}
        for part, values in costs.items()
    }
    known = [v["total"] for v in cost.values() if v["total"] is not None]
    cost["all"] = {
        "total": sum(known) if known else None,
        "per_simulation": (sum(known) / len(done)) if known and done else None,
    }
    # LLM reviews are a look at the run afterwards, not part of what it cost: shown apart.
    reviews = [c for s in done if (c := review_cost(s)) is not None]
    cost["review"] = {"total": sum(reviews) if reviews else None, "per_simulation": _mean(reviews)}
    cells = [s for cell in grid.values() for s in cell]
    return {
        "file": str(path),
        "label": _label(settings, path),
        "settings": settings,
        "simulations": base.simulations,
        "tasks": len(grid),
        "infra_errors": base.infra_errors,
        "avg_reward": avg_reward,
        "pass_hat": pass_hat,
        "db_match_rate": base.db_match_rate,
        "db_checked": base.db_checked,
        "terminations": dict(sorted(base.terminations.items())),
        "cost": cost,
        "tokens": {"prompt": base.prompt_tokens, "completion": base.completion_tokens},
        "avg_duration": base.avg_duration if base.simulations else None,
        "failures": failure_breakdown(cells, outcome),
        "reviews": reviews_summary(cells),
        "pass_hat_excluding_user_caused": pass_hat_without_user_caused(grid, outcome, max_k),
        "noise": noise(finished),
        "grid": {
            task: [
                {
                    "id": s.get("id"),
                    "trial": s.get("trial"),
                    "outcome": outcome(s),
                    "reward": (s.get("reward_info") or {}).get("reward"),
                    "diagnosis": diagnosis_of(s) if outcome(s) != PASS else None,
                    "review": review_digest(s),
                }
                for s in cell
            ]
            for task, cell in sorted(grid.items(), key=lambda kv: natural_key(kv[0]))
        },
    }


def natural_key(task_id: Any) -> tuple[tuple[int, Any], ...]:
    """Task ids in natural order: "2" before "10", "task_2" before "task_10"."""
    parts = re.split(r"(\d+)", str(task_id))
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts if p)


def compare(a: dict[str, Any], b: dict[str, Any], sims_a: list, sims_b: list) -> dict[str, Any]:
    """Run A against run B on the tasks both finished: success-rate difference per task."""
    outcomes_a, outcomes_b = task_outcomes(sims_a), task_outcomes(sims_b)
    rates_a = {t: sum(v) / len(v) for t, v in outcomes_a.items()}
    rates_b = {t: sum(v) / len(v) for t, v in outcomes_b.items()}
    common = sorted(set(rates_a) & set(rates_b), key=natural_key)
    result: dict[str, Any] = {"a": a["label"], "b": b["label"], "tasks": len(common)}
    if not common:
        result.update(
            difference=None,
            ci_low=None,
            ci_high=None,
            significant=False,
            mcnemar_p=None,
            mcnemar_note="McNemar's test is not shown: the runs share no finished task.",
            flips=[],
            verdict="The two runs share no finished task, so they cannot be compared.",
            noise=None,
        )
        return result
    paired = paired_difference([rates_a[t] for t in common], [rates_b[t] for t in common])
    mcnemar = mcnemar_test(outcomes_a, outcomes_b)
    flips = [
        {"task_id": t, "a": rates_a[t], "b": rates_b[t]}
        for t in common
        if (rates_a[t] >= 0.5) != (rates_b[t] >= 0.5)
    ]
    result.update(
        difference=paired.difference.estimate,
        ci_low=paired.difference.low,
        ci_high=paired.difference.high,
        significant=paired.significant,
        mcnemar_p=mcnemar.p,
        mcnemar_note=mcnemar.note,
        flips=flips,
        verdict=paired.verdict(a["label"], b["label"]),
        noise=pair_noise(outcomes_a, outcomes_b, common, paired.difference.estimate),
    )
    return result


def build(documents: list[tuple[Path, dict[str, Any]]]) -> dict[str, Any]:
    """The full report structure for one or more results files."""
    runs = [run_summary(path, doc) for path, doc in documents]
    seen: dict[str, int] = {}
    for run in runs:  # labels must tell runs apart
        count = seen.get(run["label"], 0)
        seen[run["label"]] = count + 1
        if count:
            run["label"] = f"{run['label']} #{count + 1}"
    comparisons = []
    for i in range(len(runs)):
        for j in range(i + 1, len(runs)):
            if runs[i]["settings"]["domain"] != runs[j]["settings"]["domain"]:
                continue
            comparisons.append(
                compare(
                    runs[i], runs[j], documents[i][1]["simulations"], documents[j][1]["simulations"]
                )
            )
    return {"format": "tau-mcp-report/1", "runs": runs, "comparisons": comparisons}
