"""Shared helpers for the harness tests: data location, domain loading, in-process MCP backend."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

from tests.support.data import DATA_DIR, missing


def domain_available(name: str) -> str | None:
    """Why a domain cannot be tested here, or None when it can."""
    return missing(name)


def load(name: str, data_dir: Path = DATA_DIR):
    """A domain on the reference data (or on `data_dir`, say DEMO_DIR)."""
    from tau_mcp.servers.domains.registry import load_domains

    return load_domains([name], data_dir)[name]


@asynccontextmanager
async def mcp_backend(*domains):
    """The real server app, in-process, reached over MCP with no socket."""
    from tau_mcp.harness.backends.http import in_process_backend

    backend = await in_process_backend({d.name: d for d in domains})
    try:
        yield backend
    finally:
        await backend.close()
