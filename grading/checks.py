"""The trajectory-only checks: actions taken, information communicated.

Each returns a component result: its reward, its per-item checks and its breakdown entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_mcp.conversation.messages import ChatMessage, Message
from tau_mcp.servers.engine.tasks import Task


def passed(reward: float | None) -> bool:
    """A reward of 1 (within float error): a pass, for the grader and the diagnosis alike."""
    return reward is not None and abs(reward - 1.0) <= 1e-6


@dataclass
class Component:
    reward: float
    checks: list[dict[str, Any]] | None = None
    breakdown: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] | None = None


def tool_calls_of(messages: list[Message]) -> list:
    calls = []
    for message in messages:
        if (
            isinstance(message, ChatMessage)
            and message.role in ("assistant", "user")
            and message.tool_calls
        ):
            calls.extend(message.tool_calls)
    return calls


def check_actions(task: Task, messages: list[Message], tool_kinds: dict[str, str]) -> Component:
    """Every gold action must match some tool call (by name and the action's compare_args)."""
    gold = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
    if not gold:
        return Component(1.0, None, {"ACTION": 1.0}, {"note": "the task lists no actions"})
    calls = tool_calls_of(messages)
    checks = []
    for action in gold:
        matched = any(action.matches(call.name, call.arguments) for call in calls)
        checks.append(
            {
                "action": action.model_dump(mode="json"),
                "action_match": matched,
                "action_reward": 1.0 if matched else 0.0,
                "tool_type": tool_kinds.get(action.name),
            }
        )
    reward = 1.0 if all(c["action_match"] for c in checks) else 0.0
    return Component(reward, checks, {"ACTION": reward})


def check_communication(
    task: Task, messages: list[Message], replies_only: bool = False
) -> Component:
    """Each communicate_info string must appear, case-insensitively, in some agent text once
    that text's commas are removed (the reference's matching rule). With `replies_only`, only
    the agent's replies to the user count, not the text of messages that call tools (the
    original τ-bench reads its `respond` actions)."""
    infos = (task.evaluation_criteria.communicate_info if task.evaluation_criteria else None) or []
    if not infos:
        return Component(
            1.0, None, {"COMMUNICATE": 1.0}, {"note": "the task lists nothing to communicate"}
        )
    texts = [
        m.content
        for m in messages
        if isinstance(m, ChatMessage)
        and m.role == "assistant"
        and m.has_text()
        and m.content
        and not (replies_only and m.tool_calls)
    ]
    checks = []
    for info in infos:
        needle = info.lower()
        where = next((t for t in texts if needle in t.lower().replace(",", "")), None)
        checks.append(
            {
                "info": info,
                "met": where is not None,
                "justification": (
                    f"'{info}' appears in the agent's message: {where!r}"
                    if where is not None
                    else f"'{info}' never appears in the agent's messages"
                ),
            }
        )
    reward = 1.0 if all(c["met"] for c in checks) else 0.0
    return Component(reward, checks, {"COMMUNICATE": reward})
