"""Issue 10, item 0 (client side): the harness's HTTP client re-sends a request that got no
response only when sending it twice cannot change anything."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from tau_mcp.harness.backends.retry import IDEMPOTENT
from tau_mcp.harness.backends.sdk_transport import SafeRetryTransport


class Flaky(httpx2.AsyncBaseTransport):
    """Drops the first `failures` requests the way a server closing a pooled connection does."""

    def __init__(self, failures: int, error: type[Exception] = httpx2.RemoteProtocolError) -> None:
        self.failures = failures
        self.error = error
        self.seen: list[bytes] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request.content)
        if len(self.seen) <= self.failures:
            raise self.error("Server disconnected without sending a response.")
        return httpx2.Response(200, json={"ok": True})


def _rpc(method: str, **params) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()


async def _send(transport: SafeRetryTransport, method: str, content: bytes = b"", **ext):
    async with httpx2.AsyncClient(transport=transport, base_url="http://s") as client:
        return await client.request(method, "/x/mcp", content=content, extensions=ext or None)


@pytest.mark.parametrize(
    "method, content, ext",
    [
        ("GET", b"", {}),
        ("DELETE", b"", {}),
        ("POST", b'{"assertions": []}', {IDEMPOTENT: True}),
        ("POST", _rpc("tools/list"), {}),
        ("POST", _rpc("initialize"), {}),
        ("POST", _rpc("tools/call", name="get_users", arguments={}), {}),
    ],
)
async def test_safe_requests_are_resent(method: str, content: bytes, ext: dict) -> None:
    inner = Flaky(failures=2)
    transport = SafeRetryTransport({"get_users"}, inner=inner)
    response = await _send(transport, method, content, **ext)
    assert response.status_code == 200 and len(inner.seen) == 3


@pytest.mark.parametrize(
    "content",
    [
        _rpc("tools/call", name="create_task", arguments={"user_id": "u", "title": "t"}),
        b'{"calls": [{"name": "create_task"}]}',  # the replay route: writes
        b"[" + _rpc("tools/list") + b"," + _rpc("tools/call", name="create_task") + b"]",
    ],
)
async def test_writes_that_may_have_landed_are_never_resent(content: bytes) -> None:
    inner = Flaky(failures=1)
    transport = SafeRetryTransport({"get_users"}, inner=inner)
    with pytest.raises(httpx2.RemoteProtocolError):
        await _send(transport, "POST", content)
    assert len(inner.seen) == 1


async def test_connection_refused_is_retried_for_any_request() -> None:
    inner = Flaky(failures=2, error=httpx2.ConnectError)
    transport = SafeRetryTransport(set(), inner=inner)
    content = _rpc("tools/call", name="create_task", arguments={})
    response = await _send(transport, "POST", content)
    assert response.status_code == 200 and len(inner.seen) == 3


async def test_gives_up_after_the_retry_budget() -> None:
    inner = Flaky(failures=10)
    transport = SafeRetryTransport(set(), inner=inner, retries=2)
    with pytest.raises(httpx2.RemoteProtocolError):
        await _send(transport, "GET")
    assert len(inner.seen) == 3


async def test_backend_learns_read_only_tools_and_creates_episodes_idempotently() -> None:
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.servers.domains.registry import load_domains
    from tests.support.data import DEMO_DIR

    backend = await in_process_backend(load_domains(["mock"], DEMO_DIR))
    try:
        ref = await backend.create_episode("mock", None)
        session = await backend.open_session(ref, "agent")
        await session.list_tools()
        assert "get_users" in backend.read_only_tools
        assert "create_task" not in backend.read_only_tools
        await session.close()
        # The same creation sent twice (as a retry would) answers 409 for our own id.
        body = {"task_id": None, "episode_id": ref.episode_id}
        json_body = ((b"content-type", b"application/json"),)
        again = await backend.exchange.send(
            "POST", "/mock/episodes", json.dumps(body).encode(), json_body
        )
        assert again.status == 409
        await backend.delete_episode(ref)
        await backend.delete_episode(ref)  # a re-sent DELETE is not an error
    finally:
        await backend.close()


# --- the harness's own exchange (aiohttp) applies the same policy ------------------------------
class RawServer:
    """A loopback HTTP/1.1 server that drops the first `drops` requests after reading them
    (as a server dying or closing a kept-alive connection does) and answers the rest with
    `{"ok": true}`, after `delay` seconds; it records every request and the open connections."""

    def __init__(self, drops: int = 0, delay: float = 0.0) -> None:
        self.drops, self.delay = drops, delay
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.open = self.most_open = 0

    async def __aenter__(self) -> RawServer:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {
                    k.lower(): v for k, v in (ln.split(": ", 1) for ln in lines[1:] if ": " in ln)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self.requests.append((lines[0], headers, body))
                if self.drops > 0 and not lines[0].startswith("GET /health"):
                    self.drops -= 1
                    return  # closed without an answer
                await asyncio.sleep(self.delay)
                answer = b'{"ok": true}'
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                    + f"content-length: {len(answer)}\r\n\r\n".encode()
                    + answer
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open -= 1
            writer.close()


def _exchange(url: str, **kwargs):
    from tau_mcp.harness.backends.exchange import HttpExchange

    return HttpExchange(url, {"Authorization": "Bearer sekrit"}, {"get_users"}, **kwargs)


@pytest.mark.parametrize(
    "method, content, safe",
    [
        ("GET", None, False),
        ("DELETE", None, False),
        ("POST", b'{"assertions": []}', True),
        ("POST", _rpc("tools/list"), False),
        ("POST", _rpc("tools/call", name="get_users", arguments={}), False),
    ],
)
async def test_the_exchange_resends_what_is_safe(method: str, content, safe: bool) -> None:
    async with RawServer(drops=2) as server:
        exchange = _exchange(server.url)
        try:
            reply = await exchange.send(method, "/x/mcp", content, resend_safe=safe)
        finally:
            await exchange.aclose()
    assert reply.status == 200 and json.loads(reply.body) == {"ok": True}
    assert len(server.requests) == 3
    assert all(h["authorization"] == "Bearer sekrit" for _, h, _ in server.requests)


async def test_the_exchange_never_resends_a_write_that_may_have_landed() -> None:
    from tau_mcp.harness.backends import InfrastructureError

    write = _rpc("tools/call", name="create_task", arguments={"user_id": "u", "title": "t"})
    async with RawServer() as server:
        exchange = _exchange(server.url)
        try:
            assert (await exchange.send("GET", "/health")).status == 200
            server.drops = 1
            with pytest.raises(InfrastructureError):
                await exchange.send("POST", "/x/mcp", write)
        finally:
            await exchange.aclose()
    sent = [body for line, _, body in server.requests if line.startswith("POST")]
    assert sent == [write]  # once; what followed was only a look at /health


async def test_the_exchange_holds_at_most_its_connections_whatever_is_in_flight() -> None:
    async with RawServer(delay=0.02) as server:
        exchange = _exchange(server.url, max_connections=4)
        try:
            replies = await asyncio.gather(*(exchange.send("GET", "/health") for _ in range(60)))
        finally:
            await exchange.aclose()
    assert [r.status for r in replies] == [200] * 60
    assert server.most_open <= 4 and len(server.requests) == 60
