"""Request guards in front of every route and MCP endpoint: a bearer token and a body-size cap.

Both are plain ASGI middleware so they also cover the mounted MCP apps, and both answer in the
server's error shape, `{"error": "..."}`.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Iterable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_ENV = "TAU_SERVER_TOKEN"
DEFAULT_MAX_BODY = 1 << 20  # 1 MiB: far above any tool call or assertion list


def token_from_env(explicit: str | None) -> str | None:
    """The token to require: the explicit one, else $TAU_SERVER_TOKEN, else none."""
    token = explicit if explicit else os.environ.get(TOKEN_ENV, "")
    return token or None


async def send_json(
    send: Send, status: int, body: bytes, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """Answer with an already-encoded JSON body (the one raw-ASGI response all guards use)."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def send_json_error(
    send: Send, status: int, message: str, headers: list | None = None
) -> None:
    await send_json(send, status, json.dumps({"error": message}).encode(), headers or ())


def bearer_value(token: str) -> bytes:
    """The `Authorization` header value that carries `token`."""
    return f"Bearer {token}".encode()


def bearer_ok(given: bytes | None, expected: bytes) -> bool:
    """Whether a request's (first) `Authorization` header is `expected`, in constant time."""
    return hmac.compare_digest(given or b"", expected)


class BearerTokenGuard:
    """Refuse any HTTP request without `Authorization: Bearer <token>` (401)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = bearer_value(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        if not bearer_ok(given, self.expected):
            reason = "missing bearer token" if not given else "invalid bearer token"
            await send_json_error(send, 401, reason, [(b"www-authenticate", b"Bearer")])
            return
        await self.app(scope, receive, send)


class BodyTooLarge(Exception):
    """Raised while a body streams past the cap; the app maps it to a 413 answer."""


class BodySizeLimit:
    """Refuse request bodies above `max_bytes` (413), by declared length or as they stream."""

    def __init__(self, app: ASGIApp, max_bytes: int = DEFAULT_MAX_BODY) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.refusal = f"request body too large (limit {max_bytes} bytes)"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = self.refusal
        declared: int | None = None
        chunked = False
        for name, value in scope["headers"]:
            if name == b"content-length" and declared is None:
                try:
                    declared = int(value)
                except ValueError:
                    await send_json_error(send, 400, "invalid Content-Length header")
                    return
                if declared > self.max_bytes:
                    await send_json_error(send, 413, message)
                    return
            elif name == b"transfer-encoding":
                chunked = True
        if declared is not None and not chunked:
            # The HTTP server hands the app exactly the declared length (the parser frames the
            # body by it), so there is nothing left to count.
            await self.app(scope, receive, send)
            return

        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            msg = await receive()
            if msg["type"] == "http.request":
                received += len(msg.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return msg

        async def tracking_send(msg: Message) -> None:
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await send_json_error(send, 413, message)
