"""A policy's action as a conversation message, and the conversation as observation text.

Actions follow the reference's gym: plain text is a message to the other party; a JSON object
`{"name": ..., "arguments": {...}}` or a function-style call `name(arg='x', n=2)` is a tool
call. RL frameworks may also hand an OpenAI-style assistant message dict (content and/or
`tool_calls`). Function-style calls are read with `ast` and literal values only: an action is
never evaluated as code.

Observations are the reference's `role: content` lines, tool calls shown function-style.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from typing import Any

from conversation.messages import ChatMessage, Message, Requestor, ToolCall, ToolMessage

_FUNCTION_STYLE = re.compile(r"^[A-Za-z_]\w*\s*\(.*\)$", re.DOTALL)
_call_ids = itertools.count(1)


class ActionError(ValueError):
    """The action cannot be read as a message; the step is refused and nothing happens."""


def parse_action(action: Any, requestor: Requestor = "assistant") -> ChatMessage:
    """The message an action stands for, sent by `requestor` (the side the policy plays)."""
    if isinstance(action, dict):
        return _from_dict(action, requestor)
    if not isinstance(action, str):
        raise ActionError(
            f"an action is a string or an OpenAI-style message dict, not {type(action).__name__}"
        )
    text = action.strip()
    if not text:
        raise ActionError("the action is empty: send text or a tool call")
    call = _json_call(text, requestor) or _function_style_call(text, requestor)
    if call is not None:
        return ChatMessage(role=requestor, tool_calls=[call])
    return ChatMessage(role=requestor, content=action)


def _new_id() -> str:
    return f"call_{next(_call_ids)}"


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
        arguments=arguments,
        requestor=requestor,
    )


def _json_call(text: str, requestor: Requestor) -> ToolCall | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    if set(value) - {"name", "arguments", "id", "requestor"}:
        return None  # some other JSON object: say it as text
    return _tool_call(value["name"], value.get("arguments"), requestor, value.get("id"))


def _literal(node: ast.expr) -> Any:
    """A keyword argument's value: literals only, tuples as lists, and JSON-able or refused."""
    value = ast.literal_eval(node)

    def plain(v: Any) -> Any:
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in v.items()}
        if v is None or isinstance(v, (str, int, float, bool)):
            return v
        raise ValueError(f"unsupported value {v!r}")

    return plain(value)


def _function_style_call(text: str, requestor: Requestor) -> ToolCall | None:
    """`name(a='x', b=2)` as a tool call; anything else (prose with brackets too) is None."""
    if not _FUNCTION_STYLE.match(text):
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.args:
        return None
    arguments: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:  # **mapping
            return None
        try:
            arguments[keyword.arg] = _literal(keyword.value)
        except (ValueError, TypeError, SyntaxError, RecursionError):
            return None
    return _tool_call(call.func.id, arguments, requestor)


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
