"""The short path for sessionless tools/call answers exactly what FastMCP answers.

Two server apps on the same data: one with the short path, one with it switched off
(`TAU_MCP_FULL_PATH=1`). Every request below must get the same status and the same bytes.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.harness import domain_available, load

pytestmark = pytest.mark.needs_data("airline")

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _request(name: str, arguments, ident=7, header_name: str | None = None, **extra):
    body = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": header_name or name,
        **extra,
    }
    return json.dumps(body), headers


CASES = [
    _request("get_user_details", {"user_id": "mia_li_3668"}),
    _request("get_user_details", {"user_id": "nobody"}, ident="abc"),
    _request("get_user_details", {}),
    _request("get_reservation_details", {"reservation_id": "4WQ150"}),
    _request("cancel_reservation", {"reservation_id": "4WQ150"}),  # a write, then
    _request("get_reservation_details", {"reservation_id": "4WQ150"}),  # its effect
    _request("no_such_tool", {}),
    _request("get_user_details", {"user_id": "mia_li_3668"}, header_name="other"),
    _request("get_user_details", "not an object"),
]


async def _answers(monkeypatch, full_path: bool) -> list[tuple[int, bytes]]:
    from tau_mcp.servers.app import ServerSettings, create_app

    if full_path:
        monkeypatch.setenv("TAU_MCP_FULL_PATH", "1")
    else:
        monkeypatch.delenv("TAU_MCP_FULL_PATH", raising=False)
    app = create_app({"airline": load("airline")}, settings=ServerSettings(warm=False))
    assert bool(app.state.tau.fast_calls) is not full_path
    answers = []
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            episode = (await client.post("/airline/episodes", json={"episode_id": "e1"})).json()
            for body, headers in CASES:
                response = await client.post(episode["agent_mcp"], content=body, headers=headers)
                answers.append((response.status_code, response.content))
    return answers


def _count_short_path(monkeypatch) -> list[bool]:
    """For each request the short path sees, whether it answered it (True) or handed it on
    (a request it declines may be offered to it twice: by the hot lane, then by the gateway)."""
    from tau_mcp.servers.fast_calls import FastToolCalls

    scopes: list[dict] = []  # kept, so that no two requests' scopes share an id
    served: list[bool] = []
    original = FastToolCalls.answer

    async def counting(self, scope, body, send, episode, *plain):
        answered = await original(self, scope, body, send, episode, *plain)
        index = next((i for i, seen in enumerate(scopes) if seen is scope), None)
        if index is None:
            scopes.append(scope)
            served.append(answered)
        else:
            served[index] = served[index] or answered
        return answered

    monkeypatch.setattr(FastToolCalls, "answer", counting)
    return served


async def test_short_path_answers_byte_for_byte_like_fastmcp(monkeypatch):
    served = _count_short_path(monkeypatch)
    fast = await _answers(monkeypatch, full_path=False)
    # the six plain calls of known tools take the short path; the last three go to FastMCP
    assert served == [True] * 6 + [False] * 3
    full = await _answers(monkeypatch, full_path=True)
    for (body, _), got, want in zip(CASES, fast, full, strict=True):
        assert got == want, body
    assert fast[0][0] == 200 and b"Mia" in fast[0][1]
    assert json.loads(fast[4][1])["result"]["isError"] is False


LIST_BODY = json.dumps(
    {"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"_meta": META}}
)
LIST_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/list",
}


async def _listings(monkeypatch, domain, full_path: bool) -> dict[str, tuple[int, dict]]:
    from tau_mcp.servers.app import ServerSettings, create_app

    if full_path:
        monkeypatch.setenv("TAU_MCP_FULL_PATH", "1")
    else:
        monkeypatch.delenv("TAU_MCP_FULL_PATH", raising=False)
    app = create_app({domain.name: domain}, settings=ServerSettings(warm=False))
    sides = ["agent"] + (["user"] if domain.spec.user_tools is not None else [])
    answers = {}
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            await client.post(f"/{domain.name}/episodes", json={"episode_id": "e1"})
            for side in sides:
                path = f"/{domain.name}/episodes/e1/{side}/mcp"
                response = await client.post(path, content=LIST_BODY, headers=LIST_HEADERS)
                answers[side] = (response.status_code, response.json())
    return answers


@pytest.mark.parametrize("name", ["mock", "airline", "retail", "telecom", "demo-mock"])
async def test_short_path_lists_tools_as_fastmcp_does(monkeypatch, name):
    """Same JSON as FastMCP's own tools/list, for every side of every domain: with the
    reference's tool texts and with our own (the demo data)."""
    from tau_mcp.servers.domains.registry import load_domains

    if name == "demo-mock":
        from pathlib import Path

        demo = Path(__file__).resolve().parents[1] / "data" / "demo"
        domain = load_domains(["mock"], demo)["mock"]
    else:
        if domain_available(name):
            pytest.skip(domain_available(name))
        domain = load(name)
    served = _count_short_path(monkeypatch)
    fast = await _listings(monkeypatch, domain, full_path=False)
    assert served and all(served), "the listing did not take the short path"
    full = await _listings(monkeypatch, domain, full_path=True)
    assert fast == full
    status, answer = fast["agent"]
    assert status == 200 and answer["id"] == 3 and answer["result"]["tools"]


async def test_in_process_server_builds_fastmcp_only_for_requests_that_need_it():
    """The harness's in-process server answers listing and calls without building a FastMCP
    app; a request only FastMCP answers (a legacy `initialize`) builds one on the spot, and the
    server still shuts down cleanly."""
    from tau_mcp.harness.backends.http import in_process_backend
    from tests.support.server import MCP_HEADERS, mcp_initialize

    backend = await in_process_backend({"airline": load("airline")})
    tau = backend.app.state.tau
    try:
        ref = await backend.create_episode("airline", "0")
        session = await backend.open_session(ref, "agent")
        assert len(await session.list_tools()) == 14
        result = await session.call_tool("get_user_details", {"user_id": "mia_li_3668"})
        assert not result.error and "Mia" in result.text
        assert tau.all_mcp_apps() == []
        headers = tuple((k.encode(), v.encode()) for k, v in MCP_HEADERS.items())
        body = json.dumps(mcp_initialize("legacy")).encode()
        reply = await backend.exchange.send("POST", ref.agent_mcp, body, headers)
        assert reply.status == 200
        assert json.loads(reply.body)["result"]["serverInfo"]["name"] == "tau2-airline-agent"
        assert len(tau.all_mcp_apps()) == 1
    finally:
        await backend.close()
