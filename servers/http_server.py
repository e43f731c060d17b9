"""Running an app under uvicorn with the connection policy every server of the project keeps
(`tau-server serve`, `tau-harness serve`, `run --agent cmd`'s loopback server).

- Keep-alive: an idle connection stays open `keep_alive` seconds (default 65), far longer than
  HTTP clients keep idle pooled connections (httpx: 5 s). With uvicorn's default of 5 s, the two
  timers raced: a client reusing a connection just as the server closed it lost the request
  (`Server disconnected without sending a response`, `ReadError`), more often on a busy machine.
- Request head deadline: a connection must deliver a complete request line and headers within
  `header_timeout` seconds of its first byte (answer 408 JSON, then close); a connection that
  sends nothing at all is closed after `header_timeout` too. Bodies have their own deadline in
  the app (`tau_mcp.servers.guards.JsonBodyGuard`).
- Request head size: a head still incomplete past `max_head_bytes` gets 431 JSON, then close.
- The parser is uvicorn's httptools protocol (llhttp, in C) and the event loop uvloop where it
  is installed: a plain request costs the server about a fifth of the CPU it did with h11 and
  asyncio's own loop (docs/performance.md, "A tool call a third of the reference's").
- Connection cap: past `max_connections` open connections, a new one gets 503 JSON and is closed.
- The listening socket is bound before anything is printed, so a port in use or out of range is
  one sentence (`BindError`).
- SIGINT and SIGTERM stop a server alike: gracefully, and then the program goes on to its own
  clean-up and exits normally (`graceful_stop`). uvicorn alone re-raises the signal once it has
  stopped, so SIGTERM ended the process (143) before any clean-up ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn

from tau_mcp.servers import compat

DEFAULT_KEEP_ALIVE = 65.0
DEFAULT_HEADER_TIMEOUT = 10.0
DEFAULT_MAX_CONNECTIONS = 1000
DEFAULT_BACKLOG = 2048
DEFAULT_MAX_HEAD_BYTES = 16 * 1024  # what h11 allowed; real heads are a few hundred bytes


@dataclass
class ConnectionPolicy:
    keep_alive: float = DEFAULT_KEEP_ALIVE
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    backlog: int = DEFAULT_BACKLOG
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES


class BindError(Exception):
    """The server cannot listen on the requested address; the message is one sentence."""


def _raw_json_response(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    return head + body


def guarded_protocol(policy: ConnectionPolicy) -> type:
    """uvicorn's httptools protocol plus the request-head deadline and size bound and the
    connection cap (uvicorn is imported only then: programs that only read the defaults above
    stay light)."""
    from tau_mcp.servers.guards import BODY_RECEIVED

    return compat.head_deadline_protocol(
        policy.max_connections,
        policy.header_timeout,
        policy.max_head_bytes,
        refused=_raw_json_response(
            503,
            "Service Unavailable",
            f"server at its connection limit ({policy.max_connections}); retry later",
        ),
        timed_out=_raw_json_response(
            408,
            "Request Timeout",
            f"request headers not received within {policy.header_timeout:g} s",
        ),
        too_large=_raw_json_response(
            431,
            "Request Header Fields Too Large",
            f"request head larger than {policy.max_head_bytes} bytes",
        ),
        body_received=BODY_RECEIVED,
    )


def bind_socket(host: str, port: int, backlog: int = DEFAULT_BACKLOG) -> socket.socket:
    """A listening socket on (host, port), or BindError saying why not in one sentence."""
    if not 0 <= port <= 65535:
        raise BindError(f"--port must be between 0 and 65535, not {port}")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise BindError(f"cannot resolve --host '{host}' ({exc.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        reason = "it is already in use" if exc.errno in (98, 48, 10048) else exc.strerror
        raise BindError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)
    return sock


def uvicorn_server(
    app: Any,
    policy: ConnectionPolicy,
    log_level: str = "warning",
    *,
    handle_signals: bool = True,
    graceful_timeout: float | None = None,
):
    """A uvicorn server for `app` with the connection policy. `handle_signals=False` leaves
    SIGINT/SIGTERM to the program hosting it (a server inside a run)."""
    import uvicorn

    config = uvicorn.Config(
        app,
        http=guarded_protocol(policy),
        timeout_keep_alive=policy.keep_alive,  # type: ignore[arg-type]
        backlog=policy.backlog,
        log_level=log_level.lower(),
        lifespan="on",
        access_log=False,
        server_header=False,
        proxy_headers=False,  # nothing here reads the client's address or scheme
        timeout_graceful_shutdown=graceful_timeout,
    )
    return uvicorn.Server(config) if handle_signals else compat.server_keeping_signals(config)


@contextlib.contextmanager
def graceful_stop(server: uvicorn.Server) -> Iterator[list[int]]:
    """SIGINT and SIGTERM stop `server` gracefully (a second one cuts its wait for open
    requests short) and stay caught until the block ends, so the host finalises (records open
    simulations, writes its results file, removes its temp folders) whichever arrives, and when.
    uvicorn alone would re-raise the signal after stopping, ending the process before that.
    Yields the signals received. Call it inside the running event loop."""
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


def run(
    app, sock: socket.socket, policy: ConnectionPolicy, log_level: str = "warning"
) -> str | None:
    """Serve `app` on an already-bound socket until SIGINT or SIGTERM; returns the name of the
    signal that stopped it (None when the server stopped by itself)."""
    server = uvicorn_server(app, policy, log_level, handle_signals=False)

    async def serve() -> list[int]:
        with graceful_stop(server) as received:
            await server.serve(sockets=[sock])
        return received

    with asyncio.Runner(loop_factory=event_loop_factory()) as runner:
        received = runner.run(serve())
    return signal.Signals(received[0]).name if received else None


def event_loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's event loop where it is installed (not on Windows), else asyncio's own (None)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
