"""Retrying only what is safe to retry when a tau-server connection fails without an answer.

A request that failed to connect was never sent: any request may be retried. A request that was
sent and got no response at all (`Server disconnected without sending a response`, a reset)
may or may not have been applied, so it is retried only when running it twice changes nothing:
GET/HEAD/OPTIONS/DELETE, POSTs the caller marks idempotent, and MCP messages that only read
(`tools/list`, `ping`, ..., and `tools/call` of a tool the server annotates `readOnlyHint`).
A write tool call that may have been applied is never re-sent; it fails as infrastructure.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

import httpx2

IDEMPOTENT = "tau.idempotent"  # request extension: this POST may safely be sent twice
# Pooled idle connections are dropped after this many seconds: below uvicorn's default
# keep-alive (5 s) so that even a server with that default never closes one we reuse.
KEEPALIVE_EXPIRY = 4.0
RETRIES = 3
_BACKOFF = (0.05, 0.25, 1.0)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
_READ_ONLY_RPC = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "ping",
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
    }
)


def _rpc_messages(request: httpx2.Request) -> list[dict] | None:
    try:
        value = json.loads(request.content)
    except (ValueError, UnicodeDecodeError, httpx2.RequestNotRead):
        return None
    messages = value if isinstance(value, list) else [value]
    return messages if all(isinstance(m, dict) for m in messages) else None


class SafeRetryTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport that re-sends a request that got no response, when that is safe."""

    def __init__(
        self,
        read_only_tools: set[str] | None = None,
        inner: httpx2.AsyncBaseTransport | None = None,
        retries: int = RETRIES,
    ) -> None:
        self.read_only_tools = read_only_tools if read_only_tools is not None else set()
        self.inner = inner or httpx2.AsyncHTTPTransport(
            limits=httpx2.Limits(
                max_connections=None,
                max_keepalive_connections=20,
                keepalive_expiry=KEEPALIVE_EXPIRY,
            ),
        )
        self.retries = retries

    def safe_to_resend(self, request: httpx2.Request) -> bool:
        if request.method in _SAFE_METHODS or request.extensions.get(IDEMPOTENT):
            return True
        if request.method != "POST":
            return False
        messages = _rpc_messages(request)
        if not messages:
            return False
        for message in messages:
            method = message.get("method")
            if method in _READ_ONLY_RPC:
                continue
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            if method == "tools/call" and params.get("name") in self.read_only_tools:
                continue
            return False
        return True

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        attempt = 0
        while True:
            try:
                return await self.inner.handle_async_request(request)
            except (httpx2.ConnectError, httpx2.ConnectTimeout):
                if attempt >= self.retries:
                    raise
            except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError):
                if attempt >= self.retries or not self.safe_to_resend(request):
                    raise
            await asyncio.sleep(_BACKOFF[min(attempt, len(_BACKOFF) - 1)])
            attempt += 1

    async def aclose(self) -> None:
        await self.inner.aclose()


def note_read_only_tools(target: set[str], tools: Iterable) -> None:
    """Record which listed MCP tools the server marks read-only (safe to re-send)."""
    for tool in tools:
        annotations = getattr(tool, "annotations", None)
        read_only = getattr(annotations, "read_only_hint", None)
        if read_only is None:
            read_only = getattr(annotations, "readOnlyHint", None)
        if read_only is True:
            target.add(tool.name)
        else:
            target.discard(tool.name)
