"""Hosting the serve app: on a port for `tau-harness serve`, or on a free loopback port inside
a running event loop (for `run --agent cmd` and tests)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import uvicorn

from harness.backends import EpisodeBackend
from harness.config import RunConfig
from harness.serve.app import create_serve_app
from harness.serve.simulation import SimulationHub, serve_simulations
from servers.engine.domain import Domain


class _EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signals to its host program."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


def quiet_server(config: uvicorn.Config) -> uvicorn.Server:
    """A uvicorn server that leaves signals to its host program (see `graceful_stop`)."""
    return _EmbeddedServer(config)


@contextlib.contextmanager
def graceful_stop(server: uvicorn.Server) -> Iterator[list[int]]:
    """SIGINT and SIGTERM stop `server` gracefully (a second one cuts its wait for open
    requests short) and stay caught until the block ends, so the host finalises (records open
    simulations, writes its results file, drops its lock) whichever arrives, and when. uvicorn
    alone would re-raise the signal after stopping, ending the process before that. Yields the
    signals received."""
    loop = asyncio.get_running_loop()
    received: list[int] = []

    def stop(number: int) -> None:
        received.append(number)
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True

    handled = (signal.SIGINT, signal.SIGTERM)
    for number in handled:
        loop.add_signal_handler(number, stop, number)
    try:
        yield received
    finally:
        for number in handled:
            loop.remove_signal_handler(number)


def make_hub(
    backend: EpisodeBackend, domain: Domain, config: RunConfig, save_to: Path | None = None
) -> SimulationHub:
    return SimulationHub(serve_simulations(backend, domain, config), save_to)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening address taken before serving, so a busy port is one clear error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.asynccontextmanager
async def hosted(
    hub: SimulationHub, token: str | None = None, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[str]:
    """Serve the hub's app in this event loop; yields its base URL (`http://host:port`)."""
    sock = bind_socket(host, port)
    family, bound = sock.family, sock.getsockname()[1]
    server = _EmbeddedServer(
        uvicorn.Config(
            create_serve_app(hub, token),
            lifespan="on",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=2,
        )
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
