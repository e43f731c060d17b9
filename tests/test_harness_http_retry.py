"""Issue 10, item 0 (client side): the harness's HTTP client re-sends a request that got no
response only when sending it twice cannot change anything."""

from __future__ import annotations

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
