"""The httpx2 transport the MCP SDK's client gets, for servers older than the sessionless
protocol revision (the MCP SDK speaks httpx2): it re-sends a request that got no response when
`tau_mcp.harness.backends.retry` says that is safe, as the harness's own exchange does."""

from __future__ import annotations

import asyncio

import httpx2

from tau_mcp.harness.backends.retry import (
    IDEMPOTENT,
    KEEPALIVE_EXPIRY,
    RETRIES,
    backoff,
    safe_to_resend,
)


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
        try:
            content = request.content
        except httpx2.RequestNotRead:
            content = None
        idempotent = bool(request.extensions.get(IDEMPOTENT))
        return safe_to_resend(request.method, content, idempotent, self.read_only_tools)

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
            await asyncio.sleep(backoff(attempt))
            attempt += 1

    async def aclose(self) -> None:
        await self.inner.aclose()
