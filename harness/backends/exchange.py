"""One HTTP request and its answer, to a tau-server in this process or across the network.

The harness speaks to the server only through `Exchange.send`: route calls (episodes, hashes,
assertions) and MCP messages alike. In-process, `AsgiExchange` hands the request to the server's
ASGI app directly: the same routes, middleware, status codes and bodies as over a socket, without
an HTTP client, a transport task or a socket per request. Remotely, `HttpExchange` sends it with
httpx over pooled connections that re-send a request only when that is safe
(see `harness.backends.retry`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from harness.backends.base import InfrastructureError

IN_PROCESS_HOST = "tau.local"
IN_PROCESS_BASE = f"http://{IN_PROCESS_HOST}"
REQUEST_TIMEOUT_S = 120.0


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    content_type: str
    body: bytes


class Exchange(Protocol):
    base_url: str

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        *,
        resend_safe: bool = False,
    ) -> Reply:
        """Send one request; `resend_safe` marks a POST that may be sent twice after a
        dropped connection. Raises InfrastructureError when no answer came."""
        ...

    async def aclose(self) -> None: ...


class AsgiExchange:
    """Requests answered by an ASGI app in this process, as a server would answer them.

    The app runs in the caller's task and must answer before returning (every tau-server route
    and its JSON-mode MCP endpoints do). After the request body, `receive` waits until the
    response is complete and then reports the client gone, as a closing connection would."""

    def __init__(self, app: Any, headers: dict[str, str] | None = None) -> None:
        self.app = app
        self.base_url = IN_PROCESS_BASE
        self._common = (
            (b"host", IN_PROCESS_HOST.encode()),
            *((k.lower().encode(), v.encode()) for k, v in (headers or {}).items()),
        )

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        *,
        resend_safe: bool = False,
    ) -> Reply:
        content = body or b""
        all_headers = [*self._common, *headers]
        if body is not None:
            all_headers.append((b"content-length", str(len(content)).encode()))
        path_only, _, query = path.partition("?")
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path_only,
            "raw_path": path_only.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": all_headers,
            "client": ("127.0.0.1", 0),
            "server": (IN_PROCESS_HOST, 80),
            "extensions": {},
        }
        answered = asyncio.Event()
        delivered = False
        status = 500
        content_type = ""
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": content, "more_body": False}
            await answered.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status, content_type
            if message["type"] == "http.response.start":
                status = message["status"]
                for key, value in message.get("headers") or ():
                    if key.lower() == b"content-type":
                        content_type = value.decode("latin-1")
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    answered.set()

        try:
            await self.app(scope, receive, send)
        except Exception as exc:  # noqa: BLE001 - a crash inside the app is a failed request
            raise InfrastructureError(f"{method} {path} failed in-process: {exc}") from exc
        finally:
            answered.set()
        return Reply(status, content_type, b"".join(chunks))

    async def aclose(self) -> None:
        return None


class HttpExchange:
    """Requests to a tau-server across the network, on pooled keep-alive connections."""

    def __init__(self, base_url: str, headers: dict[str, str], read_only_tools: set[str]) -> None:
        import httpx2

        from harness.backends.retry import SafeRetryTransport

        self.base_url = base_url.rstrip("/")
        self._httpx = httpx2
        self.client = httpx2.AsyncClient(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx2.Timeout(REQUEST_TIMEOUT_S),
            transport=SafeRetryTransport(read_only_tools),
        )

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        *,
        resend_safe: bool = False,
    ) -> Reply:
        from harness.backends.retry import IDEMPOTENT

        request_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        extensions = {IDEMPOTENT: True} if resend_safe else None
        try:
            response = await self.client.request(
                method, path, content=body, headers=request_headers, extensions=extensions
            )
        except self._httpx.HTTPError as exc:
            raise InfrastructureError(f"{method} {path} failed: {exc}") from exc
        return Reply(
            response.status_code, response.headers.get("content-type", ""), response.content
        )

    async def aclose(self) -> None:
        await self.client.aclose()
