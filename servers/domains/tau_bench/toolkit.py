"""How the original τ-bench calls a tool, for a toolkit of ours.

The original's tools are classes with a static `invoke(data, **arguments)`, called as
`Tool.invoke(data=env.data, **action.kwargs)` with the caller's arguments unchecked; an
exception becomes the observation `Error: <message>`, and a call of a name no tool has
observes `Unknown action <name>`. Our tools are static methods `tool(data, ...)` with the same
parameters, called the same way (`bound`), so every message Python writes for bad arguments is
the original's: each tool's function takes the name the original's message shows,
`<ToolClass>.invoke` in module `<original_module>.<tool>`. `data` is the episode's copy-on-write
database (`data.orders`, ...), whose tables behave as the original's dicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar

from tau_mcp.servers.engine.toolkit import Toolkit, ToolSpec

CALCULATOR_CHARACTERS = "0123456789+-*/(). "
TRANSFERRED = "Transfer successful"


def calculator(expression: Any) -> str:
    """Both domains' `calculate`: the expression's value rounded to 2 decimals; characters other
    than digits, operators, brackets, dots and spaces are refused, any failure is the text."""
    if not all(char in CALCULATOR_CHARACTERS for char in expression):
        return "Error: invalid characters in expression"
    try:
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))  # noqa: S307
    except Exception as exc:  # noqa: BLE001 - the original returns any failure as text
        return f"Error: {exc}"


def class_name(tool: str) -> str:
    """The original's class for a tool: `get_order_details` -> `GetOrderDetails`."""
    return "".join(part.capitalize() for part in tool.split("_"))


def _without_data(spec: ToolSpec) -> ToolSpec:
    """A spec whose argument schema leaves out `data`, which the engine passes, not the caller."""
    schema = dict(spec.input_schema)
    schema["properties"] = {k: v for k, v in schema["properties"].items() if k != "data"}
    schema["required"] = [name for name in schema["required"] if name != "data"]
    return dataclasses.replace(spec, input_schema=schema)


class OriginalTools(Toolkit):
    """Base of a τ-bench domain's agent tools (static methods taking `data` first)."""

    # The original's package of tool modules, e.g. `tau_bench.envs.retail.tools`.
    original_module: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name in cls.specs:
            member = vars(cls).get(name)
            if not isinstance(member, staticmethod):
                raise TypeError(f"{cls.__name__}.{name} must be a static method taking data first")
            function = member.__func__
            function.__qualname__ = f"{class_name(name)}.invoke"
            function.__module__ = f"{cls.original_module}.{name}"
        cls.specs = {name: _without_data(spec) for name, spec in cls.specs.items()}

    def bound(self, name: str) -> Callable[..., Any]:
        invoke = getattr(type(self), name)
        data = self.db

        def call(**arguments: Any) -> Any:
            return invoke(data=data, **arguments)

        return call

    def unknown_tool_result(self, name: str) -> str:
        return f"Unknown action {name}"
