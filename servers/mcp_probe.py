"""What an MCP client is shown by an endpoint: a real `tools/list` through a real client.

The probes of the server surfaces (`servers.surfaces`) use this: the app is driven in-process
(no socket) through its routes and middleware, with fastmcp's client in the modern protocol
revision (answered by the short path of `servers.fast_calls` where it applies) or with the
legacy `initialize` handshake (answered by FastMCP).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from servers.surfaces import ShownTool, as_shown

PROBE_ORIGIN = "http://probe.invalid"
PROBE_HOST = "probe.invalid"
MODERN = "2026-07-28"


@asynccontextmanager
async def running(app: Any) -> AsyncIterator[Any]:
    """The Starlette app with its lifespan entered (MCP session managers started)."""
    async with app.router.lifespan_context(app):
        yield app


async def listed_tools(app: Any, path: str, mode: str = MODERN) -> list[ShownTool]:
    """The tools an MCP client at `path` of the running in-process `app` is shown, in order."""
    import httpx2
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport
    from fastmcp.utilities.asgi_transport import StreamingASGITransport

    def factory(headers=None, timeout=None, auth=None, **_):
        return httpx2.AsyncClient(
            transport=StreamingASGITransport(app),
            base_url=PROBE_ORIGIN,
            headers=headers,
            timeout=timeout,
            auth=auth,
        )

    transport = StreamableHttpTransport(PROBE_ORIGIN + path, httpx_client_factory=factory)
    async with Client(transport, mode=mode) as client:
        listed = await client.list_tools()
    return [as_shown(t.name, t.description or "", t.input_schema) for t in listed]
