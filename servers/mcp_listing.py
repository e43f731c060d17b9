"""How an MCP endpoint presents tools: names, titles, annotation hints, the listing.

One place for what both ways of answering an MCP request say about tools: the FastMCP servers
(assembled by `tau_mcp.servers.mcp_assembly` from `ListedTool`s) and the short path for the hot
requests (`tau_mcp.servers.fast_calls`), which answers `tools/list` with the same result FastMCP
gives (`tests/test_fast_calls.py` compares them) without importing FastMCP at all. The texts
themselves come from the engine's tool listing; annotation hints from the engine's tool kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tool_listing import ToolListing
from tau_mcp.servers.engine.toolkit import Side, ToolSpec
from tau_mcp.servers.mcp_protocol import SERVER_INFO_META
from tau_mcp.servers.surfaces import Surface

TAU2 = "tau2"
#: How a benchmark (`DomainSpec.benchmark`) is named to people.
BENCHMARK_TITLES = {TAU2: "tau2", "tau-bench": "τ-bench"}


def benchmark_title(domain: Domain) -> str:
    return BENCHMARK_TITLES.get(domain.spec.benchmark, domain.spec.benchmark)


def named(domain: Domain, what: str) -> str:
    """A name for something of `domain` (an MCP server): `tau2-<domain>-<what>` for tau2's
    domains, `<domain>-<what>` for another benchmark's, whose names say it (tau-bench-retail)."""
    if domain.spec.benchmark == TAU2:
        return f"{TAU2}-{domain.name}-{what}"
    return f"{domain.name}-{what}"


def server_name(domain: Domain, side: Side) -> str:
    return named(domain, side)


def resource_uri(domain: Domain, text: str) -> str:
    """The URI of a domain's text resource (`policy`, `user-guidelines`): its benchmark's
    scheme, `tau2://airline/policy`, `tau-bench://tau-bench-retail/policy`."""
    return f"{domain.spec.benchmark}://{domain.name}/{text}"


def tool_title(name: str) -> str:
    """A display title for clients that show one (`get_user_details` → `Get User Details`)."""
    return name.replace("_", " ").replace("-", " ").title()


def annotation_hints(spec: ToolSpec) -> dict[str, bool]:
    """MCP tool annotations (wire names): reads are safe to repeat; writes change the
    episode's databases."""
    return {
        "destructiveHint": False if spec.read_only else spec.mutates,
        "idempotentHint": spec.read_only,
        "openWorldHint": False,
        "readOnlyHint": spec.read_only,
    }


@dataclass(frozen=True)
class ListedTool:
    """One tool as an MCP endpoint lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    hints: dict[str, bool]  # MCP tool annotations, wire names

    @property
    def title(self) -> str:
        return tool_title(self.name)

    def wire(self) -> dict[str, Any]:
        """Its entry in a `tools/list` result, as FastMCP's modern transport writes it for the
        assembly's tools (no `_meta`: see `mcp_assembly._StrategyTool.get_meta`)."""
        return {
            "annotations": self.hints,
            "description": self.description,
            "inputSchema": self.input_schema,
            "name": self.name,
            "title": self.title,
        }


def listed_tools(listing: ToolListing) -> list[ListedTool]:
    """The engine's listing of a side as an MCP endpoint lists it, in order."""
    return [
        ListedTool(spec.name, spec.description, spec.input_schema, annotation_hints(spec))
        for spec in listing.tools
    ]


def tools_list_result(
    surface: Surface,
    domain: Domain,
    side: Side,
    server_info: dict[str, str],
    variant: str | None = None,
) -> dict[str, Any]:
    """The `tools/list` result of a (domain, side, retrieval config) endpoint of `surface`, as
    FastMCP's modern transport gives it for the servers `tau_mcp.servers.mcp_tools.build_mcp_server`
    builds."""
    listing = surface.tools(domain, side, variant)
    return {
        "cacheScope": "private",
        "resultType": "complete",
        "tools": [tool.wire() for tool in listed_tools(listing)],
        "ttlMs": 0,
        "_meta": {SERVER_INFO_META: server_info},
    }
