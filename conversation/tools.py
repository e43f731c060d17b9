"""What a conversation participant sees of a side's tools: descriptions, results, a session.

The orchestrator hands agents and simulated users a `ToolSession`; whether it is an MCP client
over HTTP or the engine in-process is the backend's business (see `tau_mcp.harness.backends`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from tau_mcp.conversation.errors import InfrastructureError
from tau_mcp.servers.engine.toolkit import Side

#: Where a tool result's `_meta` carries what the call's own model calls cost (dollars), e.g. a
#: retrieval tool's embeddings or reranker; absent when they cost nothing.
COST_META = "tau-mcp/cost"
#: Where a tool result's `_meta` names the injected fault the call met (a robustness run:
#: docs/faults.md): `{"call": index, "tool": name, "kind": kind, "new": bool}`.
FAULT_META = "tau-mcp/fault"

__all__ = ["InfrastructureError", "Side", "ToolInfo", "ToolResult", "ToolSession"]


@dataclass(frozen=True)
class ToolInfo:
    """A tool as a client sees it: enough to offer it to a model."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)

    def openai_schema(self) -> dict[str, Any]:
        params = dict(self.input_schema) or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }


@dataclass(frozen=True)
class ToolResult:
    text: str
    error: bool
    cost: float = 0.0  # what the tool's own model calls cost (see COST_META)
    fault: dict[str, Any] | None = None  # the injected fault the call met (see FAULT_META)


def result_fault(meta: Any) -> dict[str, Any] | None:
    """The injected fault a tool result's `_meta` names (None when none or malformed)."""
    if isinstance(meta, dict):
        value = meta.get(FAULT_META)
        if isinstance(value, dict) and isinstance(value.get("kind"), str):
            return value
    return None


def result_cost(meta: Any) -> float:
    """The cost a tool result's `_meta` reports (0 when none or malformed)."""
    if isinstance(meta, dict):
        value = meta.get(COST_META)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return 0.0


class ToolSession(Protocol):
    """One side's tools on one episode (an MCP client session in the real backend)."""

    async def list_tools(self) -> list[ToolInfo]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...

    async def close(self) -> None: ...
