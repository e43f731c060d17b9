"""`tau-server stdio`: one episode of one domain side over MCP's stdio transport.

stdout carries nothing but JSON-RPC; every log line goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
from fastmcp import FastMCP

from tau_mcp.servers import compat
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import EpisodeStore
from tau_mcp.servers.engine.faults import FaultPlan
from tau_mcp.servers.engine.toolkit import Side
from tau_mcp.servers.mcp_tools import build_mcp_server
from tau_mcp.servers.stdio_drain import serve_until_answered
from tau_mcp.servers.stdio_guard import guard_stdio_server
from tau_mcp.servers.surfaces import ShownTool, View, as_shown, register_surface, variant_name

STDIO_EPISODE = "stdio"


async def _shown_over_stdio(domain: Domain, view: View, variant: str | None) -> list[ShownTool]:
    """The server `tau-server stdio --retrieval-config <variant>` runs, listed by an MCP client
    in memory."""
    from fastmcp import Client

    server = build_stdio_server(
        domain.name,
        view,  # type: ignore[arg-type]
        data_dir=domain.data_dir,
        retrieval_config=variant,
    )
    async with Client(server) as client:
        listed = await client.list_tools()
    return [as_shown(t.name, t.description or "", t.input_schema) for t in listed]


STDIO = register_surface("tau-server stdio", ("agent", "user"), _shown_over_stdio)


def build_stdio_server(
    domain_name: str,
    side: Side = "agent",
    task_id: str | None = None,
    data_dir: str | Path | None = None,
    retrieval_config: str | None = None,
    retrieval_kwargs: dict[str, Any] | None = None,
    faults: FaultPlan | None = None,
) -> FastMCP:
    """A FastMCP server whose tools act on one episode created now (from the task if given,
    with the retrieval config if the domain has them, injecting `faults` into agent calls)."""
    domains = load_domains([domain_name], data_dir)
    domain = domains[domain_name]
    domain.warm()
    variant = domain.resolve_variant(retrieval_config, retrieval_kwargs)
    episode = EpisodeStore(domains).create(
        domain_name, task_id, STDIO_EPISODE, variant=variant, faults=faults
    )
    return build_mcp_server(domain, side, lambda: episode, STDIO, variant=variant_name(variant))


def run_stdio(domain_name: str, side: Side = "agent", **options: Any) -> None:
    """Serve the server `build_stdio_server(domain_name, side, **options)` builds on stdin and
    stdout, logging to stderr."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    anyio.run(_serve_stdio, build_stdio_server(domain_name, side, **options))


async def _serve_stdio(server: FastMCP) -> None:
    """fastmcp's stdio runner (lifespan, transport context: `compat.stdio_session`), with a
    relay that answers the requests in flight when stdin closes (servers/stdio_drain.py),
    reading stdin through the guard that answers unreadable lines with a JSON-RPC error
    (servers/stdio_guard.py)."""
    from mcp.server.stdio import stdio_server

    async with compat.stdio_session(server) as low_level:
        async with guard_stdio_server(stdio_server)() as (read_stream, write_stream):
            await serve_until_answered(
                low_level, read_stream, write_stream, low_level.create_initialization_options()
            )
