"""Every place tau-mcp reaches past the documented API of FastMCP, the MCP SDK or uvicorn.

Each is needed for something the public API does not offer:

- `serve_input_schemas`: the MCP SDK checks a modern call's `Mcp-Param-*` headers against the
  tool's schema; without a lookup it lists every tool per call. We hand it the listing's
  schemas through FastMCP's low-level server (`FastMCP._mcp_server`).
- `stdio_session`: `tau-server stdio` runs FastMCP's own stdio loop with a relay (answers in
  flight when stdin closes) and a guard (bad lines get a JSON-RPC error); FastMCP's runner has
  no seam for either, so we do what it does: its transport context, `_lifespan_manager` and
  low-level server.
- `context_streams`: the MCP SDK's stdio transport hands over context-carrying streams
  (`mcp.shared._context_streams`); the guard's filtered stream must be of the same kind.
- `session_manager_of`, `open_session_ids`, `end_session`: an episode's MCP sessions end when
  the episode is deleted; the MCP SDK's session manager has no public way to end one
  (`_server_instances`, `_discard_session`), and FastMCP puts the manager on its route's
  endpoint.
- `head_deadline_protocol`: the request-head deadline, the head-size bound and the connection
  cap live in uvicorn's httptools protocol class (`uvicorn.protocols.http.httptools_impl`, its
  parser callbacks and timers).
- `server_keeping_signals`: a uvicorn server inside a program that handles SIGINT/SIGTERM
  itself (`uvicorn.Server.capture_signals`).

Nothing else in the project may do this (tests/test_compat.py reads every module). Each hook
has an entry in `HOOKS` whose check says whether the installed library still has what the hook
uses; tests/test_compat.py runs them all, so an upgrade that moves or renames one fails there,
naming the hook, instead of in some request at run time. The libraries are imported only when a
hook is used: FastMCP, the MCP SDK and uvicorn are heavy, and most callers are lazy about them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any


class LibraryChanged(RuntimeError):
    """An installed FastMCP, MCP SDK or uvicorn no longer has what a hook here uses."""


def _private(owner: Any, name: str, hook: str) -> Any:
    try:
        return getattr(owner, name)
    except AttributeError:
        raise LibraryChanged(
            f"{hook}: {type(owner).__name__} has no '{name}' any more (see servers/compat.py)"
        ) from None


# --- FastMCP ----------------------------------------------------------------------------------
def serve_input_schemas(server: Any, schemas: dict[str, dict[str, Any]]) -> None:
    """The input schemas the MCP SDK checks a call's `Mcp-Param-*` headers against, given
    directly (else it runs a whole `tools/list` on every call)."""
    low_level = _private(server, "_mcp_server", "serve_input_schemas")
    low_level.get_tool_input_schema = schemas.get


@contextlib.asynccontextmanager
async def stdio_session(server: Any) -> AsyncIterator[Any]:
    """What FastMCP's stdio runner sets up around its loop (the transport context, the server's
    lifespan); yields the MCP SDK's low-level server to run on our own streams."""
    from fastmcp.server.context import reset_transport, set_transport

    token = set_transport("stdio")
    try:
        async with _private(server, "_lifespan_manager", "stdio_session")():
            yield _private(server, "_mcp_server", "stdio_session")
    finally:
        reset_transport(token)


# --- the MCP SDK ------------------------------------------------------------------------------
def context_streams(max_buffer_size: float = 0) -> tuple[Any, Any]:
    """A (send, receive) stream pair of the kind the MCP SDK's stdio transport hands over."""
    from mcp.shared._context_streams import create_context_streams

    return create_context_streams(max_buffer_size)


def session_manager_of(mcp_app: object) -> object | None:
    """The MCP SDK's session manager behind a FastMCP HTTP app (its lifespan sets it on the
    endpoint of the app's MCP route)."""
    for route in getattr(mcp_app, "routes", []):
        endpoint = getattr(route, "endpoint", None) or getattr(route, "app", None)
        for candidate in (endpoint, getattr(endpoint, "app", None)):
            manager = getattr(candidate, "session_manager", None)
            if manager is not None:
                return manager
    return None


def open_session_ids(mcp_app: object) -> set[str]:
    """The ids (`Mcp-Session-Id`) of the sessions open on a FastMCP HTTP app."""
    manager = session_manager_of(mcp_app)
    if manager is None:
        return set()
    return set(_private(manager, "_server_instances", "open_session_ids"))


async def end_session(mcp_app: object, session_id: str) -> bool:
    """End one open session of a FastMCP HTTP app now; False when it was not open."""
    manager = session_manager_of(mcp_app)
    transport = getattr(manager, "_server_instances", {}).get(session_id)
    if transport is None:
        return False
    discard = getattr(manager, "_discard_session", None)
    if discard is not None:
        await discard(session_id, transport)
    else:
        await transport.terminate()
    return True


# --- uvicorn ----------------------------------------------------------------------------------
def head_deadline_protocol(
    max_connections: int,
    header_timeout: float,
    max_head_bytes: int,
    refused: bytes,
    timed_out: bytes,
    too_large: bytes,
    body_received: str,
) -> type:
    """uvicorn's httptools protocol class (the llhttp parser, in C) plus what the connection
    policy adds: a cap on open connections (past it, a new one gets the raw `refused` answer
    and is closed); a request-head deadline (a request line and headers must arrive within
    `header_timeout` seconds of their first byte, else the raw `timed_out` answer, then close;
    a connection that sends nothing at all is closed after that time too); and a bound on a
    request head's size (past `max_head_bytes` still incomplete, the raw `too_large` answer,
    then close: llhttp itself has none, where h11 had 16 KiB). Once a request's whole body has
    arrived, its scope gets `body_received: True` (the app's body deadline is then moot)."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeadDeadlineProtocol(HttpToolsProtocol):
        def connection_made(self, transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._head_timer = None
            self._reading_head = True  # the next bytes on the connection are a request head
            self._head_bytes = 0
            if len(self.connections) > max_connections:
                transport.write(refused)
                transport.close()
                return
            self._arm_head_timer()

        def data_received(self, data: bytes) -> None:
            if self._reading_head:
                self._head_bytes += len(data)
            super().data_received(data)
            if not self._reading_head or not self._head_bytes or self.transport.is_closing():
                return
            if self._head_bytes > max_head_bytes:
                self._cancel_head_timer()
                self.transport.write(too_large)
                self.transport.close()
            elif self._head_timer is None:
                # A head began and is not whole yet: it is timed from now. (A head that comes
                # whole, as nearly all do, never arms a timer.)
                self._arm_head_timer()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._reading_head = True

        def on_headers_complete(self) -> None:
            self._reading_head = False
            self._cancel_head_timer()
            before = self.cycle
            super().on_headers_complete()
            if self.cycle is not before:  # a request to answer (not an upgrade)
                self.cycle.transport = HeadWithBody(self.cycle.transport, self.loop)

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self.scope[body_received] = True  # type: ignore[literal-required]
            self._reading_head, self._head_bytes = True, 0

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_head_timer()
            super().connection_lost(exc)

        def _arm_head_timer(self) -> None:
            self._cancel_head_timer()
            self._head_timer = self.loop.call_later(header_timeout, self._head_timed_out)

        def _cancel_head_timer(self) -> None:
            timer = getattr(self, "_head_timer", None)
            if timer is not None:
                timer.cancel()
                self._head_timer = None

        def _head_timed_out(self) -> None:
            self._head_timer = None
            if self.transport.is_closing() or not self._reading_head:
                return
            if self._head_bytes:  # part of a request head arrived, too slowly
                self.transport.write(timed_out)
            self.transport.close()

    return HeadDeadlineProtocol


class HeadWithBody:
    """A response cycle's view of its connection: its first write (the response head) is held
    and leaves with the next one (the body's first part), in one send instead of two; a head
    whose body does not follow in the same step (a stream) leaves on the loop's next turn.
    uvicorn writes a head and a body separately, each a system call and a TCP segment."""

    __slots__ = ("_transport", "_loop", "_held", "_first")

    def __init__(self, transport: Any, loop: Any) -> None:
        self._transport, self._loop = transport, loop
        self._held: bytes | None = None
        self._first = True

    def write(self, data: bytes) -> None:
        if self._first:
            self._first = False
            self._held = data
            self._loop.call_soon(self._flush)
            return
        if self._held is not None:
            data, self._held = self._held + data, None
        self._transport.write(data)

    def _flush(self) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._transport.write(held)

    def close(self) -> None:
        self._flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def server_keeping_signals(config: Any) -> Any:
    """A uvicorn server that leaves SIGINT and SIGTERM to the program hosting it."""
    import uvicorn

    class Embedded(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):
            yield

    return Embedded(config)


# --- the checks -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Hook:
    """One reach past a library's documented API: what it touches, and a check that the
    installed library still has it (None: it does; else what is missing)."""

    name: str
    touches: str
    check: Callable[[], Awaitable[str | None]]


def _missing(owner: Any, *names: str) -> str | None:
    gone = [name for name in names if getattr(owner, name, None) is None]
    if gone:
        return f"{getattr(owner, '__qualname__', type(owner).__name__)} has no {', '.join(gone)}"
    return None


async def _check_input_schemas() -> str | None:
    from fastmcp import FastMCP

    server = FastMCP("compat-check")
    low_level = getattr(server, "_mcp_server", None)
    if low_level is None:
        return "FastMCP has no _mcp_server"
    return _missing(low_level, "get_tool_input_schema")


async def _check_stdio_session() -> str | None:
    from fastmcp import FastMCP

    try:
        from fastmcp.server.context import reset_transport, set_transport  # noqa: F401
    except ImportError as exc:
        return f"fastmcp.server.context: {exc}"
    server = FastMCP("compat-check")
    return _missing(server, "_lifespan_manager", "_mcp_server") or _missing(
        server._mcp_server, "run", "create_initialization_options"
    )


async def _check_context_streams() -> str | None:
    try:
        from mcp.shared._context_streams import create_context_streams  # noqa: F401
    except ImportError as exc:
        return f"mcp.shared._context_streams: {exc}"
    return None


async def _check_sessions() -> str | None:
    from fastmcp import FastMCP

    app = FastMCP("compat-check").http_app(path="/mcp", json_response=True)
    async with app.router.lifespan_context(app):
        manager = session_manager_of(app)
        if manager is None:
            return "no session manager on the MCP route's endpoint of FastMCP's HTTP app"
        if not isinstance(getattr(manager, "_server_instances", None), dict):
            return f"{type(manager).__qualname__} has no _server_instances dict"
        return _missing(manager, "_discard_session")


async def _check_httptools_protocol() -> str | None:
    import asyncio

    try:
        import uvicorn
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
        from uvicorn.server import ServerState
    except ImportError as exc:
        return f"uvicorn's httptools protocol: {exc}"

    async def app(scope, receive, send) -> None:  # pragma: no cover - never called
        return None

    config = uvicorn.Config(app, lifespan="off")
    protocol = HttpToolsProtocol(config, ServerState(), {}, asyncio.get_running_loop())
    methods = (
        "connection_made",
        "data_received",
        "on_message_begin",
        "on_headers_complete",
        "on_message_complete",
        "on_response_complete",
        "connection_lost",
    )
    if "scope" not in vars(protocol):
        return "HttpToolsProtocol keeps no per-request scope"
    if "cycle" not in vars(protocol):
        return "HttpToolsProtocol keeps no request-response cycle (HeadWithBody)"
    if not _writes_through_transport(RequestResponseCycle.send):
        return "RequestResponseCycle.send no longer writes through self.transport (HeadWithBody)"
    return _missing(HttpToolsProtocol, *methods) or _missing(
        protocol, "connections", "loop", "parser"
    )


def _writes_through_transport(send: Callable) -> bool:
    import inspect

    return "self.transport.write(" in inspect.getsource(send)


async def _check_signals() -> str | None:
    import uvicorn

    return _missing(uvicorn.Server, "capture_signals")


HOOKS: tuple[Hook, ...] = (
    Hook("serve_input_schemas", "FastMCP._mcp_server.get_tool_input_schema", _check_input_schemas),
    Hook(
        "stdio_session",
        "fastmcp.server.context.set_transport, FastMCP._lifespan_manager, FastMCP._mcp_server",
        _check_stdio_session,
    ),
    Hook("context_streams", "mcp.shared._context_streams", _check_context_streams),
    Hook(
        "session_manager_of / open_session_ids / end_session",
        "the route endpoint's session_manager, its _server_instances and _discard_session",
        _check_sessions,
    ),
    Hook(
        "head_deadline_protocol",
        "uvicorn.protocols.http.httptools_impl.HttpToolsProtocol (its parser callbacks, "
        "connections, loop, transport, cycle) and RequestResponseCycle.transport",
        _check_httptools_protocol,
    ),
    Hook("server_keeping_signals", "uvicorn.Server.capture_signals", _check_signals),
)
