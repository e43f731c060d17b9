"""Discoverable tools: tools a model is never shown, found by name in the knowledge base.

The agent unlocks one of its own (`unlock_discoverable_agent_tool`) and then calls it through
`call_discoverable_agent_tool`; or it gives one of the customer's to the customer
(`give_discoverable_user_tool`), who calls it through `call_discoverable_user_tool`. Both are
also callable directly by name, as every tool of a reference toolkit is.

What unlocking and giving show of a tool (description, parameters, the result it announces) is
model-facing text: it comes from the data folder's `tau2/reference_texts/banking_knowledge.json`
when present, else from our own docstrings and signatures (as the tool listings do).

Python's messages for bad arguments are part of the output and name the method's class. Our
discoverable tools live in several mixins, so the marker names each method after the class
that holds it in the reference.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.toolkit import ToolKind, ToolSpec, tool

AGENT_CLASS = "KnowledgeTools"
USER_CLASS = "KnowledgeUserTools"
# Where the reference defines its toolkits: Python names a function by module and class when a
# call's `**arguments` is not a mapping, and that message is part of the output.
REFERENCE_MODULE = "tau2.domains.banking_knowledge.tools"
TEXTS_FILE = Path("tau2") / "reference_texts" / "banking_knowledge.json"


def discoverable(kind: ToolKind, owner: str):
    """Mark a method as a discoverable tool of the toolkit class named `owner`."""

    def mark(func):
        func = tool(kind, listed=False)(func)
        func.__qualname__ = f"{owner}.{func.__name__}"
        return func

    return mark


def not_a_mapping(owner: str, name: str, value: Any) -> str:
    """Python's message for `method(**value)` with a `value` that is no mapping."""
    return (
        f"{REFERENCE_MODULE}.{owner}.{name}() argument after ** must be a mapping, "
        f"not {type(value).__name__}"
    )


@dataclass(frozen=True)
class DiscoverableInfo:
    """What a model is told about one discoverable tool."""

    name: str
    description: str
    parameters: dict[str, dict[str, Any]]  # name -> {type, description, required}

    def formatted(self) -> str:
        lines = [
            f"  - {param}: {spec.get('type', 'string')} "
            f"({'required' if spec.get('required', True) else 'optional'}) - "
            f"{spec.get('description', '')}"
            for param, spec in self.parameters.items()
        ]
        params = "\n".join(lines) if lines else "  (no parameters)"
        return f"Tool: {self.name}\nDescription: {self.description}\nParameters:\n{params}"

    def unlocked_text(self) -> str:
        return (
            f"Tool unlocked: {self.name}\nDescription: {self.description}\n\n"
            f"{self.formatted()}\n\n"
            f"You can now use this tool by calling `call_discoverable_agent_tool` with "
            f"agent_tool_name='{self.name}' and the required arguments."
        )

    def given_text(self, arguments: Any) -> str:
        shown = json.dumps(arguments, indent=2) if arguments else "(no arguments)"
        return (
            f"Tool given to user: {self.name}\nDescription: {self.description}\n"
            f"Arguments: {shown}\n\n"
            f"The user can now execute this action by calling `call_discoverable_user_tool` "
            f"with discoverable_tool_name='{self.name}' and the same arguments."
        )


@lru_cache(maxsize=8)
def _reference_infos(data_dir: Path) -> dict[str, dict[str, DiscoverableInfo]] | None:
    path = data_dir / TEXTS_FILE
    if not path.is_file():
        return None
    raw = datafiles.load_structured(path).get("discoverable_tools") or {}
    out: dict[str, dict[str, DiscoverableInfo]] = {}
    for side in ("agent", "user"):
        out[side] = {}
        for name, entry in (raw.get(side) or {}).items():
            info = entry.get("tool_info") or {}
            out[side][name] = DiscoverableInfo(
                name, info.get("description", ""), dict(info.get("parameters") or {})
            )
    return out


def announced_result(data_dir: Path | None, side: str, name: str) -> str | None:
    """The result a tool that only announces something gives, as its reference description
    states it (the indented text under `Returns:`); None without reference texts."""
    reference = _reference_infos(data_dir) if data_dir is not None else None
    found = reference[side].get(name) if reference is not None else None
    if found is None or "\nReturns:\n" not in found.description:
        return None
    return textwrap.dedent(found.description.split("\nReturns:\n", 1)[1]).strip() or None


_JSON_TYPES = ("string", "number", "integer", "boolean", "array", "object")


def _own_info(spec: ToolSpec) -> DiscoverableInfo:
    """The same fields from our docstring and signature (data without reference texts)."""
    schema = spec.input_schema
    required = set(schema.get("required", []))
    params: dict[str, dict[str, Any]] = {}
    for param, prop in schema.get("properties", {}).items():
        kinds = [prop.get("type")] + [p.get("type") for p in prop.get("anyOf", [])]
        kind = next((k for k in kinds if k in _JSON_TYPES), "string")
        params[param] = {
            "type": kind,
            "description": prop.get("description", ""),
            "required": param in required,
        }
    return DiscoverableInfo(spec.name, spec.description, params)


def info(data_dir: Path | None, side: str, spec: ToolSpec) -> DiscoverableInfo:
    """What to tell a model about the discoverable tool `spec` of `side`."""
    reference = _reference_infos(data_dir) if data_dir is not None else None
    if reference is not None and spec.name in reference[side]:
        return reference[side][spec.name]
    return _own_info(spec)
