"""Eval Protocol dataset rows for any domain and split of ours.

One row per task, readable both ways EP reads tau2 rows:
- the flat fields of EP's own tau2 datasets (`id`, `environment_context`, `user_simulation`,
  `evaluation_criteria`, `user_prompt_template`), which its benchmark adapters read, and
- `messages` + `input_metadata` of an `EvaluationRow`, so EP's default adapter needs nothing.
`environment_context.task_id` makes the server start each session from that task's initial
state (initialization data and actions, and the state the task's message history leaves).
"""

from __future__ import annotations

import json
from typing import Any

from tau_mcp.harness.agents.llm_agent import conversation_prompt
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import UnknownTask
from tau_mcp.simulator.scenario import scenario_text

DEFAULT_USER_LLM = "gpt-4.1"  # what EP's own tau2 rows name


def row_id(domain: str, task_id: str) -> str:
    return f"{domain}_task_{task_id}"


def ep_rows(
    domain: Domain,
    split: str | None = "base",
    task_ids: list[str] | None = None,
    user_llm: str = DEFAULT_USER_LLM,
    user_llm_args: dict[str, Any] | None = None,
    retrieval_config: str | None = None,
    retrieval_kwargs: dict[str, Any] | None = None,
    faults: str | None = None,
) -> list[dict[str, Any]]:
    """The rows, in the split's task order (or the order of `task_ids`). For a domain with
    retrieval configs the rows name theirs (`environment_context.retrieval_config`), which the
    server gives each session, and carry its policy. `faults` (a plan's `--faults` text) makes
    every session a robustness episode keyed by EP's seed (docs/faults.md)."""
    if task_ids:
        unknown = [t for t in task_ids if t not in domain.tasks]
        if unknown:
            raise UnknownTask(
                f"unknown task id(s) in domain '{domain.name}': {', '.join(unknown[:5])}"
            )
        ids = list(task_ids)
    else:
        ids = domain.task_ids(split)
    variant = domain.resolve_variant(retrieval_config, retrieval_kwargs)
    system_prompt = conversation_prompt(domain.policy()) if variant is None else None
    rows = []
    for task_id in ids:
        task = domain.task(task_id)
        context: dict[str, Any] = {"domain": domain.name, "task_id": task.id}
        if variant is not None:
            context["retrieval_config"] = variant.name
            if variant.kwargs:
                context["retrieval_kwargs"] = dict(variant.kwargs)
        if faults:
            context["faults"] = faults
        prompt = system_prompt or conversation_prompt(variant.policy(task))
        user = {
            "enabled": True,
            "llm": user_llm,
            "llm_args": dict(user_llm_args or {"temperature": 0.0}),
            "system_prompt": scenario_text(task.user_scenario),
        }
        criteria = (
            task.evaluation_criteria.model_dump(mode="json")
            if task.evaluation_criteria is not None
            else {}
        )
        info = {
            "environment_context": context,
            "user_simulation": user,
            "evaluation_criteria": criteria,
            "user_prompt_template": "{observation}",
        }
        rid = row_id(domain.name, task.id)
        rows.append(
            {
                "id": rid,
                **info,
                "messages": [{"role": "system", "content": prompt}],
                "input_metadata": {"row_id": rid, "dataset_info": info},
            }
        )
    return rows


def to_jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
