"""Shared helpers for the harness tests: data location, domain loading, in-process MCP backend."""

from __future__ import annotations

import importlib.util
from contextlib import asynccontextmanager

import pytest

from tests.conformance import DATA_DIR, fixtures_present

needs_data = pytest.mark.skipif(
    not (DATA_DIR / "tau2" / "domains" / "mock").is_dir(),
    reason=f"reference data not found (looked in {DATA_DIR}; set TAU2_DATA_DIR)",
)
needs_fixtures = pytest.mark.skipif(
    not fixtures_present(),
    reason=f"reference data or conformance fixtures not found (looked in {DATA_DIR})",
)


def domain_available(name: str) -> str | None:
    """Why a domain cannot be tested here, or None when it can."""
    if importlib.util.find_spec(f"servers.domains.{name}") is None:
        return f"the {name} engine package (servers/domains/{name}) is not there yet"
    if not (DATA_DIR / "tau2" / "domains" / name).is_dir():
        return f"no {name} data under {DATA_DIR}"
    return None


def load(name: str):
    from servers.domains.registry import load_domains

    return load_domains([name], DATA_DIR)[name]


@asynccontextmanager
async def mcp_backend(*domains):
    """The real server app, in-process, reached over MCP with no socket."""
    from harness.backends.http import in_process_backend

    backend = await in_process_backend({d.name: d for d in domains})
    try:
        yield backend
    finally:
        await backend.close()
