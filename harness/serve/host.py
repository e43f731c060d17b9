"""Hosting the serve app: on a port for `tau-harness serve`, or on a free loopback port inside
a running event loop (for `run --agent cmd` and tests)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

from tau_mcp.harness.serve.app import create_serve_app
from tau_mcp.harness.serve.simulation import SimulationHub
from tau_mcp.servers.guards import allowed_hosts_for
from tau_mcp.servers.http_server import ConnectionPolicy, bind_socket, uvicorn_server
from tau_mcp.servers.http_stack import HttpGuards


@contextlib.asynccontextmanager
async def hosted(
    hub: SimulationHub, token: str | None = None, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve the hub's app in this event loop, behind the same guards and connection policy as
    `tau-harness serve`; yields its base URL (`http://host:port`)."""
    sock = bind_socket(host, port)
    family, bound = sock.family, sock.getsockname()[1]
    guards = HttpGuards(token=token, allowed_hosts=allowed_hosts_for(host))
    server = uvicorn_server(
        create_serve_app(hub, guards),
        ConnectionPolicy(),
        handle_signals=False,
        graceful_timeout=2,
    )
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError("the simulation server stopped while starting")
            await asyncio.sleep(0.01)
        name = f"[{host}]" if family == socket.AF_INET6 else host
        yield f"http://{name}:{bound}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await task
        sock.close()
