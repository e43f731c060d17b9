"""Transport guards in front of every route and MCP endpoint.

They follow the MCP transport security guidance (validate `Origin`, bind to loopback, refuse
DNS-rebound `Host`s) and keep every error in the server's JSON shape:

- `HostOriginGuard`: `Host` must name the bound address or an `--allow-host` entry (421);
  a browser `Origin` must be the server itself or an `--allow-origin` entry (403); OPTIONS is
  answered by an explicit CORS policy; a POST with a body must be `application/json` (415).
- `JsonBodyGuard`: reads POST bodies within a deadline (408), and checks their JSON text against
  `tau_mcp.servers.limits` (nesting depth, number length, lone surrogates) before anything parses them
  (400); on MCP paths it also refuses JSON-RPC messages of the wrong shape (for example an
  object `id`) with a JSON-RPC error.
- `ErrorsAsJson`: any error answer that is not JSON (a framework's plain-text 400/406, say) is
  rewritten to `{"error": ...}`, or a JSON-RPC error object on MCP paths.

`tau_mcp.servers.http_stack` assembles them into the one stack every server uses.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tau_mcp.servers.auth import send_json
from tau_mcp.servers.limits import json_text_problem, parse_json

LOOPBACK_HOSTS: tuple[str, ...] = ("127.0.0.1", "localhost", "::1")
DEFAULT_BODY_TIMEOUT = 30.0  # seconds to receive a whole request body

JSONRPC_PARSE_ERROR = -32700
JSONRPC_INVALID_REQUEST = -32600

_ALLOWED_METHODS = "GET, POST, DELETE, OPTIONS"
_ALLOWED_HEADERS = (
    "authorization",
    "content-type",
    "accept",
    "last-event-id",
    "mcp-session-id",
    "mcp-protocol-version",
)
_EXPOSED_HEADERS = b"mcp-session-id, mcp-protocol-version"


def is_mcp_path(path: str) -> bool:
    """MCP endpoints answer errors as JSON-RPC error objects; every other route as {"error"}."""
    return path.endswith("/mcp") or path.endswith("/mcp/")


def error_body(path: str, message: str, code: int = JSONRPC_INVALID_REQUEST) -> bytes:
    if is_mcp_path(path):
        value: dict = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    else:
        value = {"error": message}
    return json.dumps(value).encode()


async def send_error(
    send: Send,
    scope: Scope,
    status: int,
    message: str,
    code: int = JSONRPC_INVALID_REQUEST,
    headers: Iterable[tuple[bytes, bytes]] = (),
) -> None:
    await send_json(send, status, error_body(scope.get("path", ""), message, code), headers)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return value
    return None


def host_name(host: str) -> str:
    """The name part of a `Host` header value (`[::1]:8000` -> `::1`, `a.b:80` -> `a.b`)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    if host.count(":") == 1:
        return host.split(":", 1)[0]
    return host


def host_names(allowed_hosts: Iterable[str]) -> frozenset[str]:
    """The names a `Host` header may carry, as `host_allowed` compares them ("*": any)."""
    return frozenset(host_name(h) if h != "*" else "*" for h in allowed_hosts)


def host_allowed(names: frozenset[str] | set[str], host: bytes | None) -> bool:
    """Whether a request's (first) `Host` header names this server (`host_names`)."""
    if "*" in names:
        return True
    return host is not None and host_name(host.decode("latin-1")) in names


def allowed_hosts_for(bind_host: str, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The `Host` names a server bound to `bind_host` answers to: loopback names, the bound
    address itself (unless it is a wildcard address), and `--allow-host` entries."""
    names = [*LOOPBACK_HOSTS]
    bound = host_name(bind_host)
    if bound not in ("0.0.0.0", "::", ""):
        names.append(bound)
    names += [host_name(h) if h != "*" else "*" for h in extra]
    return tuple(dict.fromkeys(names))


def guarded_headers(
    headers: Iterable[tuple[bytes, bytes]],
) -> tuple[bytes | None, bytes | None, bytes | None, bytes | None, bytes | None, bytes | None]:
    """The headers the guards read, in one pass (this runs on every request): the first `Host`,
    `Origin`, `Content-Type`, `Content-Length` and `Authorization`, as each guard reads them,
    and the last `Transfer-Encoding`."""
    host = origin = content_type = length = chunked = authorization = None
    for key, value in headers:
        if key == b"host":
            host = value if host is None else host
        elif key == b"origin":
            origin = value if origin is None else origin
        elif key == b"content-type":
            content_type = value if content_type is None else content_type
        elif key == b"content-length":
            length = value if length is None else length
        elif key == b"transfer-encoding":
            chunked = value
        elif key == b"authorization":
            authorization = value if authorization is None else authorization
    return host, origin, content_type, length, chunked, authorization


class HostOriginGuard:
    """DNS-rebinding and cross-site protection (see the module docstring)."""

    def __init__(
        self,
        app: ASGIApp,
        allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
        allowed_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.hosts = host_names(allowed_hosts)
        self.origins = {o.rstrip("/").lower() for o in allowed_origins}

    def host_ok(self, host: bytes | None) -> bool:
        return host_allowed(self.hosts, host)

    def origin_ok(self, origin: str, host: bytes | None) -> bool:
        origin = origin.rstrip("/").lower()
        if "*" in self.origins or origin in self.origins:
            return True
        # Same origin: a page served by this very host and port (the server serves none today,
        # but a proxy in front of it might).
        parts = urlsplit(origin)
        return (
            host is not None
            and parts.scheme in ("http", "https")
            and (parts.netloc == host.decode("latin-1").lower())
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host, raw_origin, content_type, length, chunked, _ = guarded_headers(scope["headers"])
        if not self.host_ok(host):
            shown = host.decode("latin-1") if host else "(none)"
            await send_error(
                send,
                scope,
                421,
                f"Host '{shown}' is not served here (allow it with --allow-host)",
            )
            return
        origin = raw_origin.decode("latin-1") if raw_origin is not None else None
        if origin is not None and not self.origin_ok(origin, host):
            await send_error(
                send, scope, 403, f"Origin '{origin}' is not allowed (allow it with --allow-origin)"
            )
            return
        method = scope["method"]
        if method == "OPTIONS":
            await self._preflight(scope, send, origin)
            return
        has_body = chunked is not None if length is None else length.strip() not in (b"0", b"")
        if method == "POST" and has_body and not is_json(content_type):
            await send_error(
                send, scope, 415, "Content-Type must be application/json on this route"
            )
            return
        if origin is None:
            await self.app(scope, receive, send)
            return

        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", []), *_cors_headers(origin)],
                }
            await send(message)

        await self.app(scope, receive, send_with_cors)

    async def _preflight(self, scope: Scope, send: Send, origin: str | None) -> None:
        headers = [(b"allow", _ALLOWED_METHODS.encode()), (b"content-length", b"0")]
        if origin is not None:
            requested = _header(scope, b"access-control-request-headers") or b""
            wanted = [h.strip().lower() for h in requested.decode("latin-1").split(",")]
            refused = [h for h in wanted if h and h not in _ALLOWED_HEADERS]
            if refused:
                await send_error(
                    send, scope, 403, f"request headers not allowed: {', '.join(refused)}"
                )
                return
            headers += [
                *_cors_headers(origin),
                (b"access-control-allow-methods", _ALLOWED_METHODS.encode()),
                (b"access-control-allow-headers", ", ".join(_ALLOWED_HEADERS).encode()),
                (b"access-control-max-age", b"600"),
            ]
        await send({"type": "http.response.start", "status": 204, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def _cors_headers(origin: str) -> list[tuple[bytes, bytes]]:
    return [
        (b"access-control-allow-origin", origin.encode("latin-1")),
        (b"access-control-expose-headers", _EXPOSED_HEADERS),
        (b"vary", b"Origin"),
    ]


def is_json(content_type: bytes | None) -> bool:
    value = (content_type or b"").split(b";", 1)[0].strip().lower()
    return value == b"application/json" or (
        value.startswith(b"application/") and value.endswith(b"+json")
    )


# --- JSON bodies ---------------------------------------------------------------------------
def jsonrpc_problem(value: object) -> str | None:
    """Why a parsed MCP POST body is not a JSON-RPC 2.0 message (or batch of them), or None."""
    messages = value if isinstance(value, list) else [value]
    if not messages:
        return "empty JSON-RPC batch"
    for message in messages:
        if not isinstance(message, dict):
            return "a JSON-RPC message must be an object"
        if message.get("jsonrpc") != "2.0":
            return "'jsonrpc' must be \"2.0\""
        if "id" in message:
            ident = message["id"]
            if isinstance(ident, bool) or not isinstance(ident, str | int):
                return "a JSON-RPC 'id' must be a string or an integer"
        if "method" in message:
            if not isinstance(message["method"], str):
                return "a JSON-RPC 'method' must be a string"
            params = message.get("params")
            if params is not None and not isinstance(params, dict | list):
                return "JSON-RPC 'params' must be an object"
        elif "id" not in message or ("result" not in message and "error" not in message):
            return "not a JSON-RPC request, notification or response"
    return None


class BodyTimeout(Exception):
    """The client did not send its whole body within the deadline."""


#: Set in a request's scope by the HTTP server's protocol (`tau_mcp.servers.http_server`) once
#: the whole body has arrived: reading it cannot wait then, so no deadline is armed (most
#: requests come in one packet, head and body).
BODY_RECEIVED = "tau.body_received"

#: The scope key under which `JsonBodyGuard` leaves an MCP body it parsed: (body, value), so the
#: short path (`tau_mcp.servers.fast_calls`) does not parse the same bytes again.
PARSED_BODY = "tau.parsed_body"


def parsed_body(scope: Scope, body: bytes) -> Any:
    """The JSON value of `body` (`parse_json`'s, errors included), parsed once per request."""
    parsed = scope.get(PARSED_BODY)
    if parsed is not None and parsed[0] is body:
        return parsed[1]
    return parse_json(body)


class JsonBodyGuard:
    """Reads each POST body within `body_timeout` seconds, then checks its JSON shape before any
    parser sees it. The body is handed on unchanged."""

    def __init__(self, app: ASGIApp, body_timeout: float = DEFAULT_BODY_TIMEOUT) -> None:
        self.app = app
        self.body_timeout = body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await receive_body(scope, receive, send, self.body_timeout)
        if body is None:
            return
        problem = body_problem(scope, body)
        if problem is not None:
            await send_error(send, scope, 400, *problem)
            return
        await self.app(scope, replay_body(body, receive), send)


async def receive_body(scope: Scope, receive: Receive, send: Send, timeout: float) -> bytes | None:
    """A POST's whole body, read within `timeout` seconds unless it has all arrived already;
    None when the client went away or did not send it in time (answered 408 here)."""
    try:
        if scope.get(BODY_RECEIVED):
            body, disconnected = await _read_body(receive)
        else:
            body, disconnected = await _read_body_within(receive, timeout)
    except TimeoutError:
        await send_error(
            send,
            scope,
            408,
            f"request body not received within {timeout:g} s",
            headers=[(b"connection", b"close")],
        )
        return None
    return None if disconnected else body


def body_problem(scope: Scope, body: bytes) -> tuple[str, int] | None:
    """Why a POST body is refused (400), with its JSON-RPC error code, or None: its JSON text
    past `tau_mcp.servers.limits`, and on MCP paths a body that does not parse or is not a
    JSON-RPC message. A parsed MCP body is left in the scope (`PARSED_BODY`)."""
    if not body.strip():
        return None
    problem = json_text_problem(body)
    if problem is not None:
        return problem, JSONRPC_PARSE_ERROR
    if not is_mcp_path(scope["path"]):
        return None
    try:
        value = parse_json(body)
    except (ValueError, UnicodeDecodeError):
        return "request body is not valid JSON", JSONRPC_PARSE_ERROR
    problem = jsonrpc_problem(value)
    if problem is not None:
        return problem, JSONRPC_INVALID_REQUEST
    scope[PARSED_BODY] = (body, value)
    return None


async def _read_body_within(receive: Receive, seconds: float) -> tuple[bytes, bool]:
    """`_read_body`, given up after `seconds` (TimeoutError). A timer that cancels this task,
    as `asyncio.timeout` does, at half its cost (half the requests wait here for a body sent
    after its head)."""
    task = asyncio.current_task()
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await _read_body(receive)
    except asyncio.CancelledError:
        if expired and task.uncancel() == 0:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()


async def _read_body(receive: Receive) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return b"", True
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), False


def replay_body(body: bytes, receive: Receive) -> Receive:
    """A receive channel that hands the already-read body over once, then defers."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


# --- errors --------------------------------------------------------------------------------
class ErrorsAsJson:
    """Rewrites any error answer (status >= 400) whose body is not JSON into the server's JSON
    shape, keeping its status. Successful answers pass untouched."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        text: list[bytes] = []

        async def rewriting_send(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                if message["status"] >= 400:
                    content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                    if b"json" not in content_type.lower():
                        held = message
                        return
                await send(message)
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            text.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            status = held["status"]
            said = b"".join(text).decode("utf-8", "replace").strip()
            body = error_body(scope["path"], said or f"HTTP {status}")
            headers = [
                (k, v)
                for k, v in held.get("headers", [])
                if k.lower() not in (b"content-type", b"content-length")
            ]
            headers += [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ]
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, rewriting_send)
