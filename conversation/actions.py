"""Reading a typed or generated turn: a tool call written function-style (`name(a='x', n=2)`)
or as JSON (`{"name": ..., "arguments": {...}}`), else plain text.

Used wherever a person or a policy writes turns as text (`tau-harness play`, the RL
environments). Function-style calls are parsed with `ast` and literal values only: nothing typed
is ever evaluated.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Container
from typing import Any

_CALL = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*$", re.S)


class ActionError(ValueError):
    """The text looks like a tool call but cannot be read as one; the message says why."""


def parse_tool_call(
    text: str, known_tools: Container[str] | None = None
) -> tuple[str, dict[str, Any]] | None:
    """(name, arguments) if `text` is a tool call, None if it is plain text.

    With `known_tools`, a function-style line naming another word (`Hello (again)`) is text.
    """
    stripped = text.strip()
    if stripped.startswith("{"):
        return _from_json(stripped)
    match = _CALL.match(stripped)
    if match is None:
        return None
    name = match.group(1)
    if known_tools is not None and name not in known_tools:
        return None
    return name, _from_call(stripped, name)


def _from_json(text: str) -> tuple[str, dict[str, Any]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ActionError(f"not valid JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(value, dict):
        raise ActionError('a JSON tool call is an object: {"name": ..., "arguments": {...}}')
    if isinstance(value.get("function"), dict):  # OpenAI style
        value = value["function"]
    name, arguments = value.get("name"), value.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            raise ActionError("the arguments text is not valid JSON") from None
    if not isinstance(name, str) or not name:
        raise ActionError('a JSON tool call needs a "name"')
    if not isinstance(arguments, dict):
        raise ActionError('"arguments" must be a JSON object')
    return name, arguments


def _from_call(text: str, name: str) -> dict[str, Any]:
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ActionError(f"cannot read the call: {exc.msg}") from None
    if not isinstance(node, ast.Call) or node.args:
        raise ActionError(f"give arguments by name: {name}(arg='value', n=2)")
    arguments: dict[str, Any] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise ActionError("**arguments are not allowed; give each argument by name")
        try:
            arguments[keyword.arg] = ast.literal_eval(keyword.value)
        except ValueError:
            raise ActionError(
                f"the value of '{keyword.arg}' must be a literal (string, number, list, ...)"
            ) from None
    return arguments
