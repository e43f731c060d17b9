"""A task's gold actions cut into turns: runs of agent actions and runs of user actions.

The oracle agent and the scripted user follow the same plan, so between them they perform every
gold action in order, each on its own side: the user does a run of its actions right before it
speaks, the agent does a run of its actions right after the user speaks.
"""

from __future__ import annotations

from tau_mcp.servers.engine.tasks import Action, Task


def gold_actions(task: Task) -> list[Action]:
    criteria = task.evaluation_criteria
    return list(criteria.actions or []) if criteria is not None else []


def user_runs(task: Task) -> tuple[bool, list[list[Action]]]:
    """The runs of consecutive user actions, and whether the first gold action is the user's
    (then the user performs that run before it first speaks)."""
    runs: list[list[Action]] = []
    previous = None
    for action in gold_actions(task):
        if action.requestor == "user":
            if previous != "user":
                runs.append([])
            runs[-1].append(action)
        previous = action.requestor
    actions = gold_actions(task)
    return bool(actions) and actions[0].requestor == "user", runs


def describe(action: Action) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in action.arguments.items())
    return f"{action.name}({args})"
