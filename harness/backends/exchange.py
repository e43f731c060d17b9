"""One HTTP request and its answer, to a tau-server in this process or across the network.

The harness speaks to the server only through `Exchange.send`: route calls (episodes, hashes,
assertions) and MCP messages alike. In-process, `AsgiExchange` hands the request to the server's
ASGI app directly: the same routes, middleware, status codes and bodies as over a socket, without
an HTTP client, a transport task or a socket per request. Remotely, `HttpExchange` sends it with
aiohttp over a bounded pool of keep-alive connections and re-sends a request only when that is
safe (see `tau_mcp.harness.backends.retry`).

A remote server that dies is given up on within a bound. When a request cannot even connect
(after the exchange's own quick retries), every request waits on one shared probe of the
server's `/health`; if nothing accepts a connection for DEAD_SERVER_S, they all fail with
`ServerGone`, which stops the run instead of letting each simulation spend its retries on a
server that is not there. If the server comes back in time, each waiting request is sent again
(it never reached the server, so that is safe). A server that never answered at all (a wrong
URL) fails at once: that is the start-up check's one sentence, not an outage.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Protocol

from tau_mcp.harness.backends.base import InfrastructureError
from tau_mcp.harness.errors import ServerGone

IN_PROCESS_HOST = "tau.local"
IN_PROCESS_BASE = f"http://{IN_PROCESS_HOST}"
REQUEST_TIMEOUT_S = 120.0
CONNECT_TIMEOUT_S = 10.0  # a connection a live server does not accept in 10 s is not coming
DEAD_SERVER_S = 10.0  # refusing connections this long (after the first refusal) = gone
PROBE_INTERVAL_S = 0.5
# Open connections per exchange (per harness process): far more than one server process needs
# to be kept busy, and well inside its connection cap (1,000 by default) with a few processes.
MAX_CONNECTIONS = 100


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
    """Requests to a tau-server across the network, on pooled keep-alive connections.

    aiohttp, not httpx/httpx2: their connection pools cost client CPU growing with the
    requests waiting on them (issue 35: ~1.8 ms a request at 64 in flight and ~3 ms at 512 for
    the httpx2 client this replaced), while aiohttp's hands a freed connection to the next
    waiter in constant time. At most `max_connections` are open at once (requests beyond
    wait their turn in the client, not in the server's accept queue); idle ones expire after
    `KEEPALIVE_EXPIRY` seconds. The session is opened on the first request, in the event loop
    that uses it."""

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str],
        read_only_tools: set[str],
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = dict(headers)
        self.read_only_tools = read_only_tools
        self.max_connections = max_connections
        self._session: Any = None
        self._header_sets: dict[tuple[tuple[bytes, bytes], ...], Any] = {}
        self._answered = False  # has the server ever answered? (else a refusal is a wrong URL)
        self._outage: asyncio.Future[None] | None = None
        self._gone: ServerGone | None = None  # given up on, until a connection succeeds again

    def _open(self) -> Any:
        import aiohttp

        from tau_mcp.harness.backends.retry import KEEPALIVE_EXPIRY

        connector = aiohttp.TCPConnector(
            limit=self.max_connections, limit_per_host=0, keepalive_timeout=KEEPALIVE_EXPIRY
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S, sock_connect=CONNECT_TIMEOUT_S),
            cookie_jar=aiohttp.DummyCookieJar(),  # tau-server sets none; skip the jar's work
        )
        return self._session

    def _headers_for(self, headers: tuple[tuple[bytes, bytes], ...]) -> Any:
        """The request's own headers as aiohttp takes them, decoded once per distinct set
        (the MCP client sends a handful: its base headers, the method and the tool name)."""
        found = self._header_sets.get(headers)
        if found is None:
            from multidict import CIMultiDict

            found = CIMultiDict((k.decode("latin-1"), v.decode("latin-1")) for k, v in headers)
            if len(self._header_sets) < 4096:
                self._header_sets[headers] = found
        return found

    async def send(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: tuple[tuple[bytes, bytes], ...] = (),
        *,
        resend_safe: bool = False,
    ) -> Reply:
        import aiohttp

        session = self._session or self._open()
        url = self.base_url + path
        request_headers = self._headers_for(headers)
        attempt = 0
        waited = False
        while True:
            try:
                async with session.request(
                    method, url, data=body, headers=request_headers
                ) as response:
                    content = await response.read()
                    reply = Reply(
                        response.status, response.headers.get("Content-Type", ""), content
                    )
                break
            except _connect_errors() as exc:  # never sent: any request may go again
                from tau_mcp.harness.backends.retry import RETRIES, backoff

                if attempt < RETRIES:
                    await asyncio.sleep(backoff(attempt))
                    attempt += 1
                    continue
                if not self._answered or waited:
                    raise InfrastructureError(
                        f"{method} {path} failed: {unreachable_reason(exc)}"
                    ) from exc
                if self._gone is not None:  # clean-up calls after the verdict: no new wait
                    raise ServerGone(str(self._gone)) from exc
                await self._server_back(exc)  # raises ServerGone when it is not
                waited, attempt = True, 0
            except (
                aiohttp.ServerDisconnectedError,
                aiohttp.ClientOSError,
                aiohttp.ClientPayloadError,
            ) as exc:
                # Sent, perhaps applied, and no (whole) answer: again only when harmless.
                from tau_mcp.harness.backends.retry import RETRIES, backoff, safe_to_resend

                if attempt < RETRIES and safe_to_resend(
                    method, body, resend_safe, self.read_only_tools
                ):
                    await asyncio.sleep(backoff(attempt))
                    attempt += 1
                    continue
                if self._gone is not None:
                    raise ServerGone(str(self._gone)) from exc
                if self._answered and not waited:
                    # A server killed under a kept-alive connection fails the request on it
                    # this way: when nothing accepts connections any more, that is the
                    # outage (ServerGone), not this request's failure. Never re-sent either way.
                    await self._server_back(exc)
                raise InfrastructureError(
                    f"{method} {path} failed: {unreachable_reason(exc)}"
                ) from exc
            except (aiohttp.ClientError, TimeoutError) as exc:
                shown = str(exc) or type(exc).__name__
                raise InfrastructureError(f"{method} {path} failed: {shown}") from exc
        self._answered, self._gone = True, None
        return reply

    async def _server_back(self, exc: Exception) -> None:
        """Wait, with every other request that could not connect, on one probe of the server."""
        if self._outage is None or self._outage.done():
            self._outage = asyncio.ensure_future(self._probe(exc))
            # waiters may all be cancelled first (the run stopping): the outcome is then read
            self._outage.add_done_callback(lambda f: f.cancelled() or f.exception())
        await asyncio.shield(self._outage)

    async def _probe(self, first: Exception) -> None:
        import aiohttp

        reason = unreachable_reason(first)
        deadline = time.monotonic() + DEAD_SERVER_S
        timeout = aiohttp.ClientTimeout(total=PROBE_INTERVAL_S * 4)
        async with aiohttp.ClientSession(timeout=timeout) as probe:
            while time.monotonic() < deadline:
                await asyncio.sleep(PROBE_INTERVAL_S)
                try:
                    async with probe.get(f"{self.base_url}/health") as response:
                        await response.read()
                    return  # any answer (even 401 or 500): something is listening again
                except _connect_errors() as exc:
                    reason = unreachable_reason(exc)
                except (aiohttp.ClientError, TimeoutError):
                    return  # it accepted the connection: up, if not yet well
        self._gone = ServerGone(
            f"tau-server at {self.base_url} stopped accepting connections ({reason}) and "
            f"still refused them {DEAD_SERVER_S:.0f} s later"
        )
        raise self._gone

    async def aclose(self) -> None:
        if self._outage is not None and not self._outage.done():
            self._outage.cancel()
        if self._session is not None:
            await self._session.close()


def _connect_errors() -> tuple[type[BaseException], ...]:
    """aiohttp's errors for a request that never reached the server (imported only when an
    error is being matched: in-process runs never load aiohttp for this)."""
    import aiohttp

    return (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)


def unreachable_reason(exc: BaseException) -> str:
    """Why a connection failed, in a few words: 'connection refused' when it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or isinstance(
            getattr(seen, "os_error", None), ConnectionRefusedError
        ):
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return str(exc).strip() or type(exc).__name__
