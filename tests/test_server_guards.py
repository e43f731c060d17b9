"""Regression tests for issue 10, server items 1-5: what a web page, a hostile client or a broken
one sends must neither reach the episodes nor get anything but a JSON error."""

from __future__ import annotations

import json

import pytest

from tau_mcp.servers.limits import json_text_problem as json_shape_problem
from tests.support.data import DATA_DIR, DEMO_DIR
from tests.support.server import MCP_HEADERS, mcp_initialize, serving

JSON = {"content-type": "application/json"}
MCP = MCP_HEADERS
INIT = mcp_initialize("probe")
CREATE_TASK = {
    "calls": [{"requestor": "assistant", "name": "create_task", "arguments": {"user_id": "ana"}}]
}


async def _task_count(http) -> int:
    state = (await http.get("/mock/episodes/v1/state")).json()
    return len(state["agent_db"]["tasks"])


def _is_json_error(response, mcp: bool = False) -> None:
    body = response.json()
    if mcp:
        assert body["jsonrpc"] == "2.0" and body["id"] is None, body
        assert isinstance(body["error"]["message"], str) and body["error"]["code"] < 0, body
    else:
        assert isinstance(body["error"], str) and body["error"], body


# --- item 1: DNS rebinding, cross-site requests, CORS ------------------------------------------
async def test_foreign_host_is_refused_everywhere() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        evil = {"host": "evil.example", "origin": "http://evil.example"}
        for method, path, body in [
            ("GET", "/health", None),
            ("POST", "/mock/episodes", {}),
            ("GET", "/mock/episodes/default/state", None),
            ("POST", "/mock/agent/mcp", INIT),
            ("POST", "/mock/mcp", INIT),
        ]:
            response = await http.request(method, path, json=body, headers={**MCP, **evil})
            assert response.status_code == 421, (path, response.text)
            _is_json_error(response, mcp=path.endswith("/mcp"))
            # The same request with only the Host forged is refused too.
            response = await http.request(
                method, path, json=body, headers={**MCP, "host": "evil.example:8000"}
            )
            assert response.status_code == 421, (path, response.text)
        assert (await http.get("/health", headers={"host": "localhost:8000"})).status_code == 200
        assert (await http.get("/health", headers={"host": "[::1]:8000"})).status_code == 200


async def test_cross_site_writes_are_refused() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        await http.post("/mock/episodes", json={"episode_id": "v1"})
        before = await _task_count(http)
        attacker = "http://attacker.example"
        # The probe's cross-site "simple" request: text/plain, no preflight.
        refused = await http.post(
            "/mock/episodes/v1/replay",
            content=json.dumps(CREATE_TASK),
            headers={"content-type": "text/plain", "origin": attacker},
        )
        assert refused.status_code == 403 and "not allowed" in refused.json()["error"]
        refused = await http.post(
            "/mock/episodes/v1/replay", json=CREATE_TASK, headers={"origin": attacker}
        )
        assert refused.status_code == 403
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "create_task", "arguments": {"user_id": "ana", "title": "x"}},
        }
        refused = await http.post(
            "/mock/episodes/v1/agent/mcp", json=call, headers={**MCP, "origin": attacker}
        )
        assert refused.status_code == 403
        _is_json_error(refused, mcp=True)
        assert refused.headers.get("access-control-allow-origin") is None
        # Without an Origin (not a browser) but as text/plain: still refused, as 415.
        refused = await http.post(
            "/mock/episodes/v1/replay",
            content=json.dumps(CREATE_TASK),
            headers={"content-type": "text/plain"},
        )
        assert refused.status_code == 415 and "application/json" in refused.json()["error"]
        assert await _task_count(http) == before


async def test_cors_policy_for_allowed_and_refused_origins() -> None:
    inspector = "http://localhost:6274"
    async with (
        serving(["mock"], DEMO_DIR, allowed_origins=(inspector,)) as srv,
        srv.http() as http,
    ):
        preflight = {
            "origin": inspector,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type, mcp-session-id, authorization",
        }
        ok = await http.options("/mock/agent/mcp", headers=preflight)
        assert ok.status_code == 204
        assert ok.headers["access-control-allow-origin"] == inspector
        assert "POST" in ok.headers["access-control-allow-methods"]
        assert "mcp-session-id" in ok.headers["access-control-allow-headers"]
        assert "mcp-session-id" in ok.headers["access-control-expose-headers"]
        bad = await http.options("/mock/agent/mcp", headers={**preflight, "origin": "http://x.y"})
        assert bad.status_code == 403
        _is_json_error(bad, mcp=True)
        odd = await http.options(
            "/mock/episodes", headers={**preflight, "access-control-request-headers": "x-evil"}
        )
        assert odd.status_code == 403 and "x-evil" in odd.json()["error"]
        real = await http.get("/health", headers={"origin": inspector})
        assert real.status_code == 200
        assert real.headers["access-control-allow-origin"] == inspector
        # Same origin as the server itself is always fine; "null" (sandboxed pages) is not.
        same = await http.get("/health", headers={"origin": "http://testserver"})
        assert same.status_code == 200
        assert (await http.get("/health", headers={"origin": "null"})).status_code == 403


# --- item 2: the assertions route --------------------------------------------------------------
async def test_assertions_route_runs_only_declared_assertions() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        await http.post("/mock/episodes", json={"episode_id": "a1"})
        before = (await http.get("/mock/episodes/a1/hash")).json()
        sneaky = [
            {
                "env_type": "assistant",
                "func_name": "create_task",
                "arguments": {"user_id": "ana", "title": "planted"},
            },
            {"env_type": "assistant", "func_name": "update_task_status", "arguments": {}},
            {"env_type": "assistant", "func_name": "__init__", "arguments": {"db": None}},
            {"env_type": "assistant", "func_name": "db", "arguments": {}},
            {
                "env_type": "user",
                "func_name": "add_notification",
                "arguments": {"notification_id": "n9", "message": "m"},
            },
            {
                "env_type": "assistant",
                "func_name": "assert_task_status",
                "arguments": {"task_id": "task_1", "expected_status": "pending"},
            },
        ]
        response = await http.post("/mock/episodes/a1/assertions", json={"assertions": sneaky})
        results = response.json()["results"]
        for result in results[:-1]:
            assert result["met"] is None and "not an assertion function" in result["error"]
        assert results[-1] == {"met": True, "error": None}
        assert (await http.get("/mock/episodes/a1/hash")).json() == before


@pytest.mark.parametrize(
    "domain", ["mock", pytest.param("telecom", marks=pytest.mark.needs_data("telecom"))]
)
def test_declared_assertions_are_read_only(domain: str) -> None:
    """Every task's env assertions, run on its initial state, leave both databases as they were."""
    from tau_mcp.servers.domains.registry import load_domains
    from tau_mcp.servers.engine.episode import EpisodeStore

    store = EpisodeStore(load_domains([domain], DEMO_DIR if domain == "mock" else DATA_DIR))
    tasks = [
        t
        for t in store.domain(domain).tasks.values()
        if t.evaluation_criteria and t.evaluation_criteria.env_assertions
    ][:40]
    assert tasks
    for task in tasks:
        episode = store.create(domain, task.id)
        before = episode.hashes()
        for assertion in task.evaluation_criteria.env_assertions:
            try:
                episode.check_assertion(assertion)
            except ValueError:
                pass  # a check that cannot run counts as unmet; it must still not write
        assert episode.hashes() == before, task.id
        store.delete(domain, episode.id)


# --- item 3: episode ids -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "episode_id", ["..", ".", ".hidden", "-x", "a/b", "a b", "é", "x" * 129, "a%2e", ""]
)
async def test_unsafe_episode_ids_are_refused(episode_id: str) -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        response = await http.post("/mock/episodes", json={"episode_id": episode_id})
        assert response.status_code == 400, response.text
        assert "episode_id must be" in response.json()["error"]
        extra = {"session_id": episode_id, "config": {}}
        init = {**INIT, "params": {**INIT["params"], "clientInfo": {"name": "p", "_extra": extra}}}
        response = await http.post("/mock/mcp", json=init, headers=MCP)
        assert response.status_code == 400 and "session_id must be" in response.json()["error"]


async def test_safe_episode_ids_round_trip() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        for episode_id in ["a..b", "run-1.trial_2~x", "x" * 128]:
            response = await http.post("/mock/episodes", json={"episode_id": episode_id})
            assert response.status_code == 201
            assert response.json()["agent_mcp"] == f"/mock/episodes/{episode_id}/agent/mcp"


# --- item 4: JSON shapes -----------------------------------------------------------------------
DEEP = b"[" * 100_000 + b"]" * 100_000
BIG_INT = b'{"calls": [], "n": ' + b"9" * 5000 + b"}"


@pytest.mark.parametrize("body", [DEEP, BIG_INT, b'{"a":' * 70 + b"1" + b"}" * 70])
async def test_hostile_json_shapes_get_400_on_every_json_route(body: bytes) -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        await http.post("/mock/episodes", json={"episode_id": "e1"})
        for path in [
            "/mock/episodes",
            "/mock/episodes/e1/replay",
            "/mock/episodes/e1/assertions",
            "/mock/mcp",
            "/mock/agent/mcp",
            "/mock/episodes/e1/user/mcp",
        ]:
            response = await http.post(path, content=body, headers=MCP)
            assert response.status_code == 400, (path, response.status_code, response.text)
            _is_json_error(response, mcp=path.endswith("/mcp"))


def test_shape_check_ignores_strings_and_allows_real_bodies() -> None:
    assert json_shape_problem(b'{"s": "' + b"[" * 5000 + b"9" * 500 + b'"}') is None
    assert json_shape_problem(b'{"s": "a\\"[[[[", "n": -12.5e3}') is None
    assert json_shape_problem(json.dumps({"a": [[[{"b": [1, 2]}]]]}).encode()) is None
    assert "deeper" in json_shape_problem(b"[" * 65 + b"]" * 65)
    assert "number" in json_shape_problem(b"[" + b"1" * 101 + b"]")


# --- item 5: every error is JSON ---------------------------------------------------------------
async def test_mcp_errors_are_json_rpc_errors() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        for path in ["/mock/agent/mcp", "/mock/mcp", "/mock/episodes/default/agent/mcp"]:
            plain = await http.post(
                path,
                content=json.dumps(INIT),
                headers={"content-type": "text/plain", "accept": MCP["accept"]},
            )
            assert plain.status_code == 415, plain.text
            _is_json_error(plain, mcp=True)
            for bad_id in [{"x": 1}, [1], 1.5, True, None]:
                message = {**INIT, "id": bad_id}
                response = await http.post(path, json=message, headers=MCP)
                assert response.status_code == 400, (path, bad_id, response.text)
                _is_json_error(response, mcp=True)
            for junk in [b"[]", b"3", b'{"id": 1, "method": "ping"}', b"{not json"]:
                response = await http.post(path, content=junk, headers=MCP)
                assert response.status_code == 400, (path, junk, response.text)
                _is_json_error(response, mcp=True)
            # The MCP library's own refusals (here: a client that accepts no JSON) are JSON too.
            response = await http.post(path, json=INIT, headers={**JSON, "accept": "text/html"})
            assert response.status_code >= 400
            _is_json_error(response, mcp=True)


# --- issue 35: the cheaper tool call keeps every answer ---------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        b'{"a": [1, -2.5, true, null, "x\\u00e9\\n"], "b": {"c": 1E3}}',
        b'{"big": 123456789012345678901234567890}',  # orjson would read a float
        b'{"n": -9999999999999999999}',
        b"[NaN, Infinity]",
        b'{"a": 1e400}',
        b'\xef\xbb\xbf{"bom": 1}',
        b'{"a": 1, "a": 2}',
        "[1, 2]".encode("utf-16"),
    ],
)
def test_parse_json_is_json_loads(body: bytes) -> None:
    from tau_mcp.servers.limits import parse_json

    expected = json.loads(body)
    got = parse_json(body)
    assert json.dumps(got) == json.dumps(expected)
    assert [type(v) for v in _leaves(got)] == [type(v) for v in _leaves(expected)]


@pytest.mark.parametrize("body", [b"{not json", b'{"a": 1', b"", b'"\\ud800 unterminated'])
def test_parse_json_refuses_what_json_loads_refuses(body: bytes) -> None:
    from tau_mcp.servers.limits import parse_json

    with pytest.raises(ValueError):
        json.loads(body)
    with pytest.raises(ValueError):
        parse_json(body)


@pytest.mark.parametrize(
    "value",
    [
        {"id": 7, "result": {"text": 'caf\u00e9 \u2028 \x01 "q" \\ \U0001f600', "ok": False}},
        {"id": 2**63 - 1, "t": [None, True, ""]},
        {"id": 2**70},  # past 64 bits: json_utf8 writes it
        {1: "non-str key"},
        {"lone": "\ud800"},
    ],
)
def test_floatless_replies_are_json_utf8_byte_for_byte(value) -> None:
    from tau_mcp.servers.limits import json_utf8, json_utf8_floatless

    assert json_utf8_floatless(value) == json_utf8(value)


def _leaves(value):
    if isinstance(value, dict):
        for inner in value.values():
            yield from _leaves(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _leaves(inner)
    else:
        yield value


@pytest.mark.parametrize(
    "path",
    [
        "/mock/episodes/e1/agent/mcp",
        "/mock/episodes/e1/user/mcp",
        "/mock/episodes/e1/agent/mcp/",
        "/mock/episodes//agent/mcp",
        "/mock/agent/mcp",
        "/mock/episodes/e1/agent/mcpx",
        "//episodes/e1/agent/mcp",
        "/mock/episodes/e1/agent/extra/mcp",
        "/mock/episodes/e1",
    ],
)
def test_the_front_route_is_the_routers_first_route(path: str) -> None:
    """`TauServer.front` takes exactly the requests the router's first route (the episode MCP
    gateway) would, with the same path parameters."""
    from starlette.routing import Match

    from tau_mcp.servers.app import TauServer

    server = TauServer({})
    first = server.routes()[0]
    scope = {"type": "http", "path": path, "root_path": "", "method": "POST"}
    match, child = first.matches(scope)
    picked = server.front(dict(scope))
    assert (picked is not None) == (match is Match.FULL), path
    if picked is not None:
        front_scope = dict(scope)
        server.front(front_scope)
        assert front_scope["path_params"] == child["path_params"]


async def test_front_routes_answer_exceptions_as_the_router_would() -> None:
    """An exception from a front-routed endpoint gets the app's handler for it (an engine
    error its status, anything else a 500 naming only its type), as through the router."""
    import httpx2
    from starlette.routing import Route

    from tau_mcp.servers.engine.errors import UnknownEpisode
    from tau_mcp.servers.http_stack import AsgiEndpoint, HttpGuards, guarded_app

    async def gone(scope, receive, send):
        raise UnknownEpisode("no such episode")

    async def broken(scope, receive, send):
        raise RuntimeError("secret detail")

    endpoints = {"/gone": gone, "/broken": broken}
    routes = [Route(path, AsgiEndpoint(endpoint)) for path, endpoint in endpoints.items()]
    guards = HttpGuards(allowed_hosts=("testserver",))
    for front in (None, lambda scope: endpoints.get(scope["path"])):
        app = guarded_app(routes, guards, front=front)
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
            gone_reply = await http.get("/gone")
            assert gone_reply.status_code == 404
            assert gone_reply.json() == {"error": "no such episode"}
            broken_reply = await http.get("/broken")
            assert broken_reply.status_code == 500
            assert broken_reply.json() == {"error": "internal server error (RuntimeError)"}
