"""Eval Protocol rollouts as simulations in the reference's results layout, so
`tau-harness evaluate` grades them (all components, COMMUNICATE and NL_ASSERTION included).

EP keeps a rollout as OpenAI-style messages: a system prompt, the simulated user's turns as
`user`, the policy's turns as `assistant` (tool calls with JSON-string arguments) and tool
results as `tool`. The system prompt is not part of a tau2 trajectory and is dropped.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from tau_mcp.harness.results import SimulationRecord

# EP's termination reasons, as the reference names them. EP ends a conversation either on the
# user's stop word or when the policy stops calling tools without a simulated user.
_ENDINGS = {
    "user_stop": "user_stop",
    "stop": "agent_stop",
    "max_steps": "max_steps",
    "control_plane_signal": "agent_stop",
}


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw or "{}")
    except (TypeError, json.JSONDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def _text(content: Any) -> str | None:
    if isinstance(content, list):  # content blocks: keep the text ones
        parts = [b.get("text", "") for b in content if isinstance(b, dict)]
        return "".join(parts) or None
    return content


def ep_messages_to_tau(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        if role == "assistant":
            calls = [
                {
                    "id": call.get("id") or "",
                    "name": (call.get("function") or {}).get("name", ""),
                    "arguments": _arguments((call.get("function") or {}).get("arguments")),
                    "requestor": "assistant",
                }
                for call in message.get("tool_calls") or []
            ]
            out.append(
                {
                    "role": "assistant",
                    "content": _text(message.get("content")) or None,
                    "tool_calls": calls or None,
                }
            )
        elif role == "user":
            out.append({"role": "user", "content": _text(message.get("content"))})
        elif role == "tool":
            out.append(
                {
                    "role": "tool",
                    "id": message.get("tool_call_id") or "",
                    "content": _text(message.get("content")),
                    "requestor": "assistant",
                }
            )
    return out


def simulation_from_ep(
    task_id: str, messages: list[dict[str, Any]], termination: str | None, trial: int = 0
) -> dict[str, Any]:
    """One simulation record (its layout) from an EP rollout's messages and termination
    reason: ungraded, without the times a run records."""
    record = SimulationRecord(
        id=str(uuid.uuid4()),
        task_id=task_id,
        termination_reason=_ENDINGS.get(termination or "", termination or "unknown"),
        reward_info=None,
        messages=ep_messages_to_tau(messages),
        trial=trial,
        info={"source": "eval-protocol"},
    )
    return record.layout()
