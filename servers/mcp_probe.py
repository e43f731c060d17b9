"""What an MCP client is shown by an endpoint: a real `tools/list` through a real client.

The probes of the server surfaces (`tau_mcp.servers.surfaces`) use this: the app is driven in-process
(no socket) through its routes and middleware, with fastmcp's client in the modern protocol
revision (answered by the short path of `tau_mcp.servers.fast_calls` where it applies) or with the
legacy `initialize` handshake (answered by FastMCP), or as Eval Protocol connects (a legacy
handshake whose `clientInfo._extra` names the session and its row config).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tau_mcp.servers.mcp_protocol import LEGACY_VERSION, MODERN_VERSION
from tau_mcp.servers.surfaces import ShownTool, as_shown

PROBE_ORIGIN = "http://probe.invalid"
PROBE_HOST = "probe.invalid"
_ACCEPT = "application/json, text/event-stream"


@asynccontextmanager
async def running(app: Any) -> AsyncIterator[Any]:
    """The Starlette app with its lifespan entered (MCP session managers started)."""
    async with app.router.lifespan_context(app):
        yield app


def _http_client(app: Any, headers=None, timeout=None, auth=None, **_) -> Any:
    import httpx2
    from fastmcp.utilities.asgi_transport import StreamingASGITransport

    return httpx2.AsyncClient(
        transport=StreamingASGITransport(app),
        base_url=PROBE_ORIGIN,
        headers=headers,
        timeout=timeout,
        auth=auth,
    )


async def created_episode(app: Any, domain: str, body: dict[str, Any]) -> dict[str, Any]:
    """`POST /{domain}/episodes` with `body` on the running in-process `app`: its answer."""
    async with _http_client(app) as http:
        answer = await http.post(f"/{domain}/episodes", json=body)
    if answer.status_code != 201:
        raise RuntimeError(f"POST /{domain}/episodes answered {answer.status_code}: {answer.text}")
    return answer.json()


async def listed_tools_as_ep(
    app: Any, path: str, config: dict[str, Any], session_id: str = "probe-session"
) -> list[ShownTool]:
    """The tools an Eval Protocol client is shown at `path`: a legacy `initialize` whose
    `clientInfo._extra` carries the session id and the row's `config`, then `tools/list`."""
    info = {"name": "probe", "version": "0", "_extra": {"session_id": session_id, "config": config}}
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": info},
    }
    headers = {"accept": _ACCEPT}
    async with _http_client(app) as http:
        opened = await http.post(path, json=init, headers=headers)
        if opened.status_code != 200:
            raise RuntimeError(f"initialize at {path} answered {opened.status_code}: {opened.text}")
        headers |= {"mcp-session-id": opened.headers["mcp-session-id"]}
        headers |= {"mcp-protocol-version": LEGACY_VERSION}
        await http.post(
            path, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers
        )
        listed = await http.post(
            path, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=headers
        )
    tools = listed.json()["result"]["tools"]
    return [as_shown(t["name"], t.get("description") or "", t.get("inputSchema")) for t in tools]


async def listed_tools(app: Any, path: str, mode: str = MODERN_VERSION) -> list[ShownTool]:
    """The tools an MCP client at `path` of the running in-process `app` is shown, in order."""
    from functools import partial

    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    factory = partial(_http_client, app)
    transport = StreamableHttpTransport(PROBE_ORIGIN + path, httpx_client_factory=factory)
    async with Client(transport, mode=mode) as client:
        listed = await client.list_tools()
    return [as_shown(t.name, t.description or "", t.input_schema) for t in listed]
