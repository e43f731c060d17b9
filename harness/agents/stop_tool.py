"""The solo agent's finishing tool as the reference declares it, when the data carries its texts.

It is offered to the model next to the MCP tools, so its description must match the reference's
as theirs do (see `tau_mcp.servers.surfaces`).
"""

from __future__ import annotations

from tau_mcp.harness.backends import ToolInfo
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.surfaces import solo_stop_tool as reference_stop_tool


def solo_stop_tool(domain: Domain) -> ToolInfo | None:
    found = reference_stop_tool(domain)
    return ToolInfo(*found) if found is not None else None
