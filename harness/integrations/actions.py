"""A policy's action as a conversation message, and the conversation as observation text.

Actions follow the reference's gym: plain text is a message to the other party; a JSON object
`{"name": ..., "arguments": {...}}` or a function-style call `name(arg='x', n=2)` is a tool
call. RL frameworks may also hand an OpenAI-style assistant message dict (content and/or
`tool_calls`). Text is read by `tau_mcp.conversation.actions`, shared with `tau-harness play`: calls
with `ast` and literal values only, so an action is never evaluated as code.

Observations are the reference's `role: content` lines, tool calls shown function-style.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Container
from typing import Any

from tau_mcp.conversation.actions import ActionError, parse_tool_call
from tau_mcp.conversation.messages import ChatMessage, Message, Requestor, ToolCall, ToolMessage

__all__ = ["ActionError", "function_style", "message_line", "observation_text", "parse_action"]

_call_ids = itertools.count(1)


def parse_action(
    action: Any, requestor: Requestor = "assistant", known_tools: Container[str] | None = None
) -> ChatMessage:
    """The message an action stands for, sent by `requestor` (the side the policy plays).

    Text is read with `tau_mcp.conversation.actions` (as `tau-harness play` reads typed turns); with
    `known_tools`, a function-style line naming anything else (`Sure (happy to help)`) is text.
    """
    if isinstance(action, dict):
        return _from_dict(action, requestor)
    if not isinstance(action, str):
        raise ActionError(
            f"an action is a string or an OpenAI-style message dict, not {type(action).__name__}"
        )
    if not action.strip():
        raise ActionError("the action is empty: send text or a tool call")
    parsed = parse_tool_call(action, known_tools)
    if parsed is None:
        return ChatMessage(role=requestor, content=action)
    name, arguments = parsed
    return ChatMessage(role=requestor, tool_calls=[_tool_call(name, arguments, requestor)])


def _new_id() -> str:
    return f"call_{next(_call_ids)}"


def _json_value(value: Any, name: str) -> Any:
    """Arguments go over MCP as JSON: tuples become lists, anything else non-JSON is refused."""
    if isinstance(value, (tuple, list)):
        return [_json_value(v, name) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v, name) for k, v in value.items()}
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ActionError(f"an argument of '{name}' is not a JSON value: {value!r}")


def _tool_call(name: Any, arguments: Any, requestor: Requestor, call_id: Any = None) -> ToolCall:
    if not isinstance(name, str) or not name:
        raise ActionError("a tool call needs a non-empty string `name`")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise ActionError(
                f"the arguments of tool call '{name}' are not valid JSON: {arguments[:200]!r}"
            ) from None
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ActionError(f"the arguments of tool call '{name}' must be an object")
    return ToolCall(
        id=str(call_id) if call_id else _new_id(),
        name=name,
        arguments=_json_value(arguments, name),
        requestor=requestor,
    )


def _from_dict(action: dict[str, Any], requestor: Requestor) -> ChatMessage:
    """An OpenAI chat message (content and/or tool_calls), or a bare `{"name", "arguments"}`."""
    if "name" in action and "content" not in action and "tool_calls" not in action:
        call = _tool_call(action["name"], action.get("arguments"), requestor, action.get("id"))
        return ChatMessage(role=requestor, tool_calls=[call])
    content = action.get("content")
    if isinstance(content, list):  # content parts: keep the text ones
        content = (
            "".join(part.get("text", "") for part in content if isinstance(part, dict)) or None
        )
    if content is not None and not isinstance(content, str):
        raise ActionError("message `content` must be a string")
    calls = []
    for raw in action.get("tool_calls") or []:
        if not isinstance(raw, dict):
            raise ActionError("each entry of `tool_calls` must be an object")
        function = raw.get("function") if isinstance(raw.get("function"), dict) else raw
        calls.append(
            _tool_call(function.get("name"), function.get("arguments"), requestor, raw.get("id"))
        )
    if not calls and not (content and content.strip()):
        raise ActionError("the message has neither text nor tool calls")
    return ChatMessage(role=requestor, content=content, tool_calls=calls or None)


# --- observations ---------------------------------------------------------------------------
def function_style(call: ToolCall) -> str:
    """A tool call as `name(arg='x', n=2)`; `parse_action` reads it back."""
    args = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    return f"{call.name}({args})"


def message_line(message: Message) -> str:
    if isinstance(message, ToolMessage):
        return f"tool: {message.content or ''}"
    if message.tool_calls:
        return f"{message.role}: " + ", ".join(function_style(c) for c in message.tool_calls)
    return f"{message.role}: {message.content or ''}"


def observation_text(messages: list[Message], own_role: str, full: bool = False) -> str:
    """The conversation as `role: content` lines. By default (as in the reference's gym) only
    what came after the policy's own last message; `full` gives every message it has seen."""
    if not full:
        for index in range(len(messages) - 1, -1, -1):
            message = messages[index]
            if isinstance(message, ChatMessage) and message.role == own_role:
                messages = messages[index + 1 :]
                break
    return "\n".join(message_line(m) for m in messages)
