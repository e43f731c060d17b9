"""Shared helpers for the server tests: the app in-process, or a real server in a subprocess."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import httpx2
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from fastmcp.utilities.asgi_transport import StreamingASGITransport

from tau_mcp.servers.app import ServerSettings, create_app
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.guards import LOOPBACK_HOSTS
from tests.support.data import DATA_DIR, DEMO_DIR

ORIGIN = "http://testserver"
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


def mcp_initialize(client: str = "probe", version: str = "0", **client_extra) -> dict:
    """A raw JSON-RPC `initialize` request (id 1) from client `client`; keyword arguments are
    extra `clientInfo` fields (Eval Protocol's `_extra`, say)."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": version, **client_extra},
        },
    }


def domain_ready(name: str) -> str | None:
    """None when the domain's package imports, else why not (so a test can skip)."""
    try:
        load_domains([name], DATA_DIR)
    except Exception as exc:  # noqa: BLE001
        return f"domain '{name}' not available: {type(exc).__name__}: {exc}"
    return None


class InProcess:
    """The whole app driven in-process (no socket) for raw HTTP and MCP clients."""

    def __init__(self, app) -> None:
        self.app = app

    def http(self, headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=StreamingASGITransport(self.app), base_url=ORIGIN, headers=headers
        )

    def mcp(self, path: str, mode: str = "2026-07-28", token: str | None = None) -> Client:
        def factory(headers=None, timeout=None, auth=None, **_):
            return httpx2.AsyncClient(
                transport=StreamingASGITransport(self.app),
                base_url=ORIGIN,
                headers=headers,
                timeout=timeout,
                auth=auth,
            )

        transport = StreamableHttpTransport(ORIGIN + path, httpx_client_factory=factory, auth=token)
        return Client(transport, mode=mode)


@asynccontextmanager
async def serving(
    domains: list[str], data_dir: Path = DATA_DIR, **settings
) -> AsyncIterator[InProcess]:
    """Enter the app's lifespan inside the test (a fixture holding it across `yield` fails)."""
    settings.setdefault("allowed_hosts", (*LOOPBACK_HOSTS, "testserver"))
    app = create_app(domain_names=domains, data_dir=data_dir, settings=ServerSettings(**settings))
    async with app.router.lifespan_context(app):
        yield InProcess(app)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def real_server(
    domains: str, *extra: str, env: dict[str, str] | None = None, data_dir: Path = DATA_DIR
) -> Iterator[str]:
    """`tau-server serve` in a subprocess on a free loopback port; yields its base URL."""
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from tau_mcp.servers.cli import app; app()",
        "serve",
        "--port",
        str(port),
        "--domains",
        domains,
        "--data-dir",
        str(data_dir),
        *extra,
    ]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code in (200, 401):
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not start within 60 s")
            time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def spawned(
    command: list[str], health: str = "/health", env: dict[str, str] | None = None
) -> Iterator[str]:
    """Any server command on a free loopback port (`{port}` in `command`, the demo data by
    default); yields its base URL once `health` answers 200."""
    port = free_port()
    proc = subprocess.Popen(
        [arg.format(port=port) for arg in command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TAU2_DATA_DIR": str(DEMO_DIR), **(env or {})},
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{command[:4]} exited: {proc.stderr.read().decode()[-1500:]}")
            try:
                if httpx.get(base + health, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[:4]} did not start within 90 s")
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
