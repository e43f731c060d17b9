"""The original τ-bench's reward_info (`RewardResult.model_dump()`) from our grader's.

Our grader scores a τ-bench task on DB (the data hash after the gold actions against the
agent's end state) and COMMUNICATE (every required output in the agent's replies), which is the
original's reward. The original reports it as `{reward, info, actions}`, where `info` is
`{r_actions, gt_data_hash}` (RewardActionInfo) unless the task has outputs: then the original
replaces it by `{r_outputs, outputs: {output: found}}` (RewardOutputInfo), so `r_actions` is not
reported although a hash mismatch still makes the reward 0. `actions` are the gold actions
without `respond`. Results in the original's layout need this shape.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.domains.tau_bench.tasks import original_task
from tau_mcp.servers.engine.tasks import Task

RESPOND = "respond"


def original_reward_info(task: Task, reward_info: dict[str, Any]) -> dict[str, Any]:
    """The original's reward_info for a graded τ-bench task (our grader's `reward_info`)."""
    original = original_task(task)
    actions = [
        {"name": action["name"], "kwargs": action["kwargs"]}
        for action in original["actions"]
        if action["name"] != RESPOND
    ]
    if original["outputs"]:
        found = {check["info"]: bool(check["met"]) for check in reward_info["communicate_checks"]}
        info: dict[str, Any] = {
            "r_outputs": 1.0 if all(found.values()) else 0.0,
            "outputs": found,
        }
    else:
        env = (reward_info.get("info") or {}).get("env") or {}
        gold = (env.get("db_hashes") or {}).get("gold") or {}
        matched = bool((reward_info.get("db_check") or {}).get("db_match"))
        info = {"r_actions": 1.0 if matched else 0.0, "gt_data_hash": gold.get("agent_db")}
    return {"reward": float(reward_info["reward"]), "info": info, "actions": actions}
