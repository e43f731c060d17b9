"""The hot lane (`tau_mcp.servers.hot_lane`) answers a plain sessionless tool call in one pass,
and every request gets exactly the answer the full guard stack gives it.

Two apps on the same demo data, one with the lane and one without (`TauServer.hot` switched
off): every request below, plain or breaking one guard, must get the same status, headers and
bytes from both, and leave both episodes in the same state.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.support.data import DEMO_DIR

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
PATH = "/mock/episodes/e1/agent/mcp"
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
}
# The answer's headers that a guard may set or change.
COMPARED_HEADERS = (
    "content-type",
    "content-length",
    "connection",
    "www-authenticate",
    "access-control-allow-origin",
    "vary",
)


def call(name: str, arguments, ident=1) -> tuple[bytes, dict[str, str]]:
    body = {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    headers = {**HEADERS, "mcp-method": "tools/call", "mcp-name": name}
    return json.dumps(body).encode(), headers


def listing() -> tuple[bytes, dict[str, str]]:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}}
    return json.dumps(body).encode(), {**HEADERS, "mcp-method": "tools/list"}


PLAIN_READ = call("get_users", {})
PLAIN_WRITE = call("create_task", {"user_id": "ana", "title": "lane"})


def _with(request, body: bytes | None = None, **headers: str):
    old_body, old_headers = request
    return (old_body if body is None else body), {**old_headers, **headers}


# (label, (body, headers), path)
CASES = [
    ("plain read", PLAIN_READ, PATH),
    ("plain write", PLAIN_WRITE, PATH),
    ("plain listing", listing(), PATH),
    ("foreign host", _with(PLAIN_READ, host="evil.example"), PATH),
    ("cross-site origin", _with(PLAIN_READ, origin="http://evil.example"), PATH),
    ("text/plain body", _with(PLAIN_READ, **{"content-type": "text/plain"}), PATH),
    ("+json body", _with(PLAIN_READ, **{"content-type": "application/vnd.x+json"}), PATH),
    ("bad content-length", _with(PLAIN_READ, **{"content-length": "twelve"}), PATH),
    ("body too large", _with(PLAIN_READ, body=b" " * 3000), PATH),
    ("empty body", _with(PLAIN_READ, body=b""), PATH),
    ("not JSON", _with(PLAIN_READ, body=b"{nope"), PATH),
    ("nested too deep", _with(PLAIN_READ, body=b"[" * 100 + b"]" * 100), PATH),
    ("number too long", _with(PLAIN_READ, body=b'{"x": ' + b"1" * 200 + b"}"), PATH),
    (
        "JSON-RPC id of the wrong type",
        _with(PLAIN_READ, body=PLAIN_READ[0].replace(b'"id": 1', b'"id": {"a": 1}')),
        PATH,
    ),
    (
        "a lone surrogate in a plain call",
        _with(PLAIN_WRITE, body=PLAIN_WRITE[0].replace(b'"lane"', b'"\\ud800"')),
        PATH,
    ),
    (
        "a long number in a plain call",
        _with(PLAIN_WRITE, body=PLAIN_WRITE[0].replace(b'"lane"', b"1" * 200)),
        PATH,
    ),
    ("unknown tool", call("no_such_tool", {}), PATH),
    ("name header disagrees", _with(PLAIN_READ, **{"mcp-name": "create_task"}), PATH),
    ("legacy session header", _with(PLAIN_READ, **{"mcp-session-id": "nope"}), PATH),
    ("old protocol version", _with(PLAIN_READ, **{"mcp-protocol-version": "2025-06-18"}), PATH),
    ("failing tool", call("create_task", {"user_id": "nobody", "title": "x"}), PATH),
    ("unknown episode", PLAIN_READ, "/mock/episodes/nope/agent/mcp"),
    ("unknown side", PLAIN_READ, "/mock/episodes/e1/robot/mcp"),
    ("unknown domain", PLAIN_READ, "/nope/episodes/e1/agent/mcp"),
    ("user side", call("get_users", {}), "/mock/episodes/e1/user/mcp"),
    ("plain read again", PLAIN_READ, PATH),
]


def _app(lane: bool, monkeypatch, **settings):
    from tau_mcp.servers.app import ServerSettings, TauServer, create_app

    defaults = {"warm": False, "max_body_bytes": 2048}
    with monkeypatch.context() as patch:
        if not lane:
            patch.setattr(TauServer, "hot", lambda self, scope: None)
        return create_app(
            domain_names=["mock"],
            data_dir=DEMO_DIR,
            settings=ServerSettings(**defaults, **settings),
        )


async def _answers(app, requests, token: str | None = None) -> list[tuple]:
    answers = []
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        auth = {"authorization": f"Bearer {token}"} if token else {}
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            created = await client.post("/mock/episodes", json={"episode_id": "e1"}, headers=auth)
            assert created.status_code == 201, created.text
            for _, (body, headers), path in requests:
                response = await client.post(path, content=body, headers={**auth, **headers})
                shown = {k: response.headers.get(k) for k in COMPARED_HEADERS}
                answers.append((response.status_code, shown, response.content))
            state = (await client.get("/mock/episodes/e1/state", headers=auth)).json()
    return [*answers, state]


async def test_every_request_gets_the_stacks_answer(monkeypatch) -> None:
    from tau_mcp.servers import guards

    seen_by_stack: list[str] = []
    original = guards.JsonBodyGuard.__call__

    async def counting(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] == "POST":
            seen_by_stack.append(scope["path"])
        await original(self, scope, receive, send)

    laned = await _answers(_app(True, monkeypatch), CASES)
    plain = await _answers(_app(False, monkeypatch), CASES)
    for (label, _, _), got, want in zip(CASES, laned, plain, strict=False):
        assert got == want, label
    assert laned[-1] == plain[-1]  # the episodes' states
    assert [status for status, _, _ in laned[:3]] == [200, 200, 200]
    assert {laned[i][0] for i in range(3, 16)} == {400, 403, 413, 415, 421}

    # The lane answered the plain calls; the stack saw only what the lane handed on.
    monkeypatch.setattr(guards.JsonBodyGuard, "__call__", counting)
    await _answers(_app(True, monkeypatch), [CASES[0], CASES[2], CASES[-1]])
    assert seen_by_stack == ["/mock/episodes"]  # the episode's creation only


async def test_the_token_guard_holds_in_the_lane(monkeypatch) -> None:
    requests = [
        ("right token", PLAIN_READ, PATH),
        ("wrong token", _with(PLAIN_READ, authorization="Bearer wrong"), PATH),
        ("no bearer", _with(PLAIN_READ, authorization="secret"), PATH),
    ]
    laned = await _answers(_app(True, monkeypatch, token="secret"), requests, token="secret")
    plain = await _answers(_app(False, monkeypatch, token="secret"), requests, token="secret")
    assert laned == plain
    assert [status for status, _, _ in laned[:3]] == [200, 401, 401]


async def test_an_exception_in_the_lane_is_answered_as_the_stack_answers_it(monkeypatch) -> None:
    from tau_mcp.servers.fast_calls import FastToolCalls

    async def broken(self, scope, body, send, episode, *plain):
        raise RuntimeError("boom")

    answers = []
    monkeypatch.setattr(FastToolCalls, "answer", broken)
    for lane in (True, False):
        answers.append((await _answers(_app(lane, monkeypatch), [CASES[0]]))[0])
    assert answers[0] == answers[1]
    status, _, body = answers[0]
    assert status == 500 and json.loads(body) == {"error": "internal server error (RuntimeError)"}


async def test_a_body_that_does_not_arrive_gets_the_stacks_408(monkeypatch) -> None:
    body, headers = PLAIN_READ
    answers = []
    for lane in (True, False):
        app = _app(lane, monkeypatch, body_timeout=0.2)
        sent: list[dict] = []

        async def never() -> dict:
            await asyncio.sleep(60)
            return {"type": "http.disconnect"}

        send = _collector(sent)

        async with app.router.lifespan_context(app):
            app.state.tau.store.create("mock", None, "e1")
            scope = {
                "type": "http",
                "asgi": {"version": "3.0"},
                "http_version": "1.1",
                "method": "POST",
                "scheme": "http",
                "path": PATH,
                "raw_path": PATH.encode(),
                "root_path": "",
                "query_string": b"",
                "headers": [
                    (b"host", b"127.0.0.1"),
                    (b"content-length", str(len(body)).encode()),
                    *((k.encode(), v.encode()) for k, v in headers.items()),
                ],
                "client": ("127.0.0.1", 1),
                "server": ("127.0.0.1", 80),
            }
            await asyncio.wait_for(app(scope, never, send), 10)
        answers.append(sent)
    assert answers[0] == answers[1]
    assert answers[0][0]["status"] == 408


def _collector(sent: list[dict]):
    async def send(message: dict) -> None:
        sent.append(message)

    return send


@pytest.mark.parametrize("held_then", ["body", "next turn", "close"])
async def test_a_response_head_leaves_with_its_body(held_then: str) -> None:
    from tau_mcp.servers.compat import HeadWithBody

    class Transport:
        def __init__(self) -> None:
            self.writes: list[bytes] = []
            self.closed = False

        def write(self, data: bytes) -> None:
            self.writes.append(data)

        def close(self) -> None:
            self.closed = True

        def is_closing(self) -> bool:
            return self.closed

        def get_extra_info(self, name: str):
            return f"info:{name}"

    raw = Transport()
    cycle_view = HeadWithBody(raw, asyncio.get_running_loop())
    cycle_view.write(b"HEAD")
    assert raw.writes == []  # held
    if held_then == "body":
        cycle_view.write(b"BODY")
        cycle_view.write(b"MORE")
        assert raw.writes == [b"HEADBODY", b"MORE"]  # one send for head and body
    elif held_then == "next turn":  # a stream whose first part comes later
        await asyncio.sleep(0)
        assert raw.writes == [b"HEAD"]
        cycle_view.write(b"PART")
        assert raw.writes == [b"HEAD", b"PART"]
    else:
        cycle_view.close()
        assert raw.writes == [b"HEAD"] and raw.closed
    await asyncio.sleep(0)
    assert b"".join(raw.writes).startswith(b"HEAD") and raw.writes.count(b"HEAD") <= 1
    assert cycle_view.get_extra_info("peername") == "info:peername"
