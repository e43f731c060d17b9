"""How an MCP endpoint presents a domain side's tools: titles, annotation hints, the listing.

One place for what both ways of answering an MCP request say about tools: the FastMCP servers
(`tau_mcp.servers.mcp_tools`) and the short path for the hot requests (`tau_mcp.servers.fast_calls`), which
answers `tools/list` with the same result FastMCP gives (`tests/test_fast_calls.py` compares
them) without importing FastMCP at all. The texts themselves come from the engine's tool
listing; annotation hints from the engine's tool kinds.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tool_listing import Side
from tau_mcp.servers.engine.toolkit import ToolSpec
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
    tools = [
        {
            "_meta": {"fastmcp": {"tags": []}},
            "annotations": annotation_hints(spec),
            "description": spec.description,
            "inputSchema": spec.input_schema,
            "name": spec.name,
            "title": tool_title(spec.name),
        }
        for spec in surface.tools(domain, side, variant).tools
    ]
    return {
        "cacheScope": "private",
        "resultType": "complete",
        "tools": tools,
        "ttlMs": 0,
        "_meta": {"io.modelcontextprotocol/serverInfo": server_info},
    }
