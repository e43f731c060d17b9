"""`tau-server stdio`: one episode of one domain side over MCP's stdio transport.

stdout carries nothing but JSON-RPC; every log line goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from fastmcp import FastMCP

from servers.domains.registry import load_domains
from servers.engine.episode import EpisodeStore, Side
from servers.mcp_tools import build_mcp_server
from servers.stdio_guard import install as install_stdio_guard

STDIO_EPISODE = "stdio"


def build_stdio_server(
    domain_name: str,
    side: Side = "agent",
    task_id: str | None = None,
    data_dir: str | Path | None = None,
) -> FastMCP:
    """A FastMCP server whose tools act on one episode created now (from the task if given)."""
    domains = load_domains([domain_name], data_dir)
    domain = domains[domain_name]
    domain.warm()
    episode = EpisodeStore(domains).create(domain_name, task_id, STDIO_EPISODE)
    return build_mcp_server(domain, side, lambda: episode)


def run_stdio(
    domain_name: str,
    side: Side = "agent",
    task_id: str | None = None,
    data_dir: str | Path | None = None,
) -> None:
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    server = build_stdio_server(domain_name, side, task_id, data_dir)
    install_stdio_guard()  # unreadable lines get a JSON-RPC error instead of silence
    server.run(transport="stdio", show_banner=False, log_level="WARNING")
