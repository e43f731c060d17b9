"""Issue 22, server side: `tau-harness serve` behind the same guards, bounds and connection
policy as `tau-server`, and the holes both had. Each test sends the probe's own input, bounded
and on loopback, on the demo data (no reference data needed).

Bounds on time here are generous (seconds where the fixed code takes milliseconds and the old
code took minutes or never answered): they cannot flake on a busy machine. The speed itself is
measured by `scripts/bench_load.py --hostile`.
"""

from __future__ import annotations

import json
import random
import sys
import time
from contextlib import asynccontextmanager

import httpx2
import pytest

from tau_mcp.harness.config import RunConfig, trial_seeds
from tau_mcp.harness.results import SimulationRecord
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import make_hub
from tau_mcp.servers.app import ServerSettings, create_app
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.data import DEMO_DIR
from tau_mcp.servers.guards import LOOPBACK_HOSTS
from tau_mcp.servers.limits import (
    MAX_ID_CHARS,
    MAX_MESSAGE_CHARS,
    MAX_NAME_CHARS,
    MAX_OPTIONS,
    MAX_OPTIONS_CHARS,
    MAX_OPTIONS_DEPTH,
    MAX_TRIAL,
    json_text_problem,
)
from tau_mcp.servers.stdio_guard import check_line
from tests.support.harness import mcp_backend
from tests.support.server import InProcess, mcp_initialize

MODERN = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
EVIL = "http://evil.example.com"
HOSTILE_STRING = b'"' + b'\\"' * (
    (1 << 19) - 1
)  # an unterminated string of escaped quotes, 1 MiB less a byte


def mcp_request(method: str, params: dict, ident: int = 1, name: str | None = None):
    """(headers, body) of a sessionless modern MCP request."""
    headers = {**JSON, "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    body = {"jsonrpc": "2.0", "id": ident, "method": method, "params": {**params, "_meta": META}}
    return headers, json.dumps(body)


def call_tool(name: str, arguments: dict, ident: int = 1):
    return mcp_request("tools/call", {"name": name, "arguments": arguments}, ident, name)


@asynccontextmanager
async def demo_serve(token: str | None = None):
    """`tau-harness serve`'s app on loopback (mock demo data, scripted user)."""
    domain = load_domains(["mock"], DEMO_DIR)["mock"]
    config = RunConfig(judge_llm="none", domain="mock", agent="mcp", user="scripted")
    async with mcp_backend(domain) as backend:
        hub = make_hub(backend, domain, config)
        try:
            async with hosted(hub, token) as base:
                async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
                    yield http, hub, next(iter(domain.tasks))
        finally:
            await hub.close()


@asynccontextmanager
async def demo_server():
    """tau-server's app in-process with its network guards on (mock demo data)."""
    settings = ServerSettings(allowed_hosts=(*LOOPBACK_HOSTS, "testserver"))
    app = create_app(domain_names=["mock"], data_dir=DEMO_DIR, settings=settings)
    async with app.router.lifespan_context(app), InProcess(app).http() as http:
        yield http


# --- item 1: request fields bounded before any work -------------------------------------------
async def test_a_huge_trial_is_refused_before_any_work() -> None:
    async with demo_serve() as (http, hub, task_id):
        probe = json.dumps({"task_id": task_id, "trial": 10**30})
        start = time.monotonic()
        plain = await http.post(
            "/simulations", content=probe, headers={"content-type": "text/plain"}
        )
        huge = await http.post("/simulations", content=probe, headers=JSON)
        past = await http.post("/simulations", json={"task_id": task_id, "trial": MAX_TRIAL + 1})
        digits = await http.post(
            "/simulations",
            content=f'{{"task_id": "{task_id}", "trial": {"9" * 5000}}}',
            headers=JSON,
        )
        assert time.monotonic() - start < 20
        assert plain.status_code == 415 and "application/json" in plain.json()["error"]
        assert huge.status_code == 400 and f"0 to {MAX_TRIAL}" in huge.json()["error"]
        assert past.status_code == 400
        assert digits.status_code == 400 and "number" in digits.json()["error"]
        assert hub.simulations == {}
        # The largest trial is served, with the seed `run` gives it.
        last = await http.post("/simulations", json={"task_id": task_id, "trial": MAX_TRIAL})
        assert last.status_code == 201, last.text
        simulation = hub.get(last.json()["simulation_id"])
        assert simulation.seed == trial_seeds(hub.runner.config.seed, MAX_TRIAL + 1)[MAX_TRIAL]


async def test_ids_and_messages_are_bounded_on_both_servers() -> None:
    long_id = "x" * (MAX_ID_CHARS + 1)
    async with demo_server() as http:
        for body in ({"task_id": long_id}, {"episode_id": long_id}, {"task_id": 7}):
            answer = await http.post("/mock/episodes", json=body)
            assert answer.status_code == 400 and "error" in answer.json(), body
    async with demo_serve() as (http, hub, task_id):
        answer = await http.post("/simulations", json={"task_id": long_id})
        assert answer.status_code == 400 and str(MAX_ID_CHARS) in answer.json()["error"]
        created = (await http.post("/simulations", json={"task_id": task_id})).json()
        headers, body = call_tool(
            "send_message_to_user", {"message": "x" * (MAX_MESSAGE_CHARS + 1)}
        )
        reply = await http.post(created["mcp"], content=body, headers=headers)
        assert reply.status_code == 200
        result = reply.json()["result"]
        assert result["isError"] and str(MAX_MESSAGE_CHARS) in result["content"][0]["text"]
        assert hub.get(created["simulation_id"]).channel.moves == 0  # not played


async def test_retrieval_fields_are_bounded_before_the_engine_sees_them() -> None:
    """`retrieval_config` and `retrieval_kwargs` (episode route and Eval Protocol sessions) are
    bounded like every other field: name length, key count, nesting and size."""
    nested: dict = {"top_k": 5}
    for _ in range(MAX_OPTIONS_DEPTH):
        nested = {"inner": nested}
    refused = [
        ({"retrieval_config": "x" * (MAX_NAME_CHARS + 1)}, str(MAX_NAME_CHARS)),
        ({"retrieval_config": ""}, "non-empty string"),
        ({"retrieval_config": 5}, "non-empty string"),
        ({"retrieval_kwargs": {f"k{i}": 1 for i in range(MAX_OPTIONS + 1)}}, str(MAX_OPTIONS)),
        ({"retrieval_kwargs": nested}, f"deeper than {MAX_OPTIONS_DEPTH} levels"),
        ({"retrieval_kwargs": {"k": "x" * MAX_OPTIONS_CHARS}}, str(MAX_OPTIONS_CHARS)),
        ({"retrieval_kwargs": [1]}, "must be an object"),
    ]
    async with demo_server() as http:
        for body, why in refused:
            answer = await http.post("/mock/episodes", json=body)
            assert answer.status_code == 400 and why in answer.json()["error"], body
            extra = {"session_id": "bounded", "config": body}
            opened = await http.post(
                "/mock/mcp",
                json=mcp_initialize(_extra=extra),
                headers={"accept": "application/json, text/event-stream"},
            )
            assert opened.status_code == 400 and why in opened.json()["error"], body
        # Within the bounds, the engine decides (mock has no retrieval configs).
        within = {"retrieval_config": "bm25", "retrieval_kwargs": {"top_k": 5}}
        answer = await http.post("/mock/episodes", json=within)
        assert answer.status_code == 400 and "no retrieval configs" in answer.json()["error"]


# --- item 2: serve refuses cross-origin and rebound requests ----------------------------------
async def test_serve_refuses_cross_origin_and_rebound_requests() -> None:
    async with demo_serve() as (http, hub, task_id):
        created = (await http.post("/simulations", json={"task_id": task_id})).json()
        body = json.dumps({"task_id": task_id})
        attempts = [
            ("POST", "/simulations", {"host": "evil.example.com", **JSON}, body, 421),
            ("GET", "/simulations", {"host": "evil.example.com"}, None, 421),
            ("POST", "/simulations", {"origin": EVIL, **JSON}, body, 403),
            ("POST", f"/simulations/{created['simulation_id']}/end", {"origin": EVIL}, None, 403),
            ("POST", created["mcp"], {"origin": EVIL, **JSON}, "{}", 403),
            ("OPTIONS", "/simulations", {"origin": EVIL}, None, 403),
            ("POST", "/simulations", {"content-type": "text/plain"}, body, 415),
        ]
        for method, path, headers, content, status in attempts:
            answer = await http.request(method, path, headers=headers, content=content)
            assert answer.status_code == status, (method, path, headers, answer.text)
            assert "error" in answer.json() or "error" in answer.json().get("error", {})
        assert list(hub.simulations) == [created["simulation_id"]]
        assert hub.get(created["simulation_id"]).status == "open"


# --- item 3: the JSON text check is linear ----------------------------------------------------
def _slow_depth_and_strings(body: bytes, max_depth: int) -> tuple[bool, bool]:
    """(too deep, lone surrogate) by a plain byte-by-byte scan, to check the fast one against.
    A backslash escapes the next character wherever it stands (outside a string the text is no
    JSON anyway, so either answer refuses it)."""
    depth = peak = 0
    in_string = lone = pending_high = False
    i = 0
    while i < len(body):
        c = body[i : i + 1]
        if c == b"\\":
            value = -1
            if body[i + 1 : i + 2] == b"u" and len(body) >= i + 6:
                try:
                    value = int(body[i + 2 : i + 6], 16)
                except ValueError:
                    value = -1
            if 0xDC00 <= value <= 0xDFFF:
                lone |= not pending_high
                pending_high = False
            else:
                lone |= pending_high
                pending_high = 0xD800 <= value <= 0xDBFF
            i += 6 if value >= 0 else 2
            continue
        lone |= pending_high
        pending_high = False
        if c == b'"':
            in_string = not in_string
        elif not in_string and c in b"[{":
            depth += 1
            peak = max(peak, depth)
        elif not in_string and c in b"]}":
            depth -= 1
        i += 1
    return peak > max_depth, lone | pending_high


def test_json_text_check_agrees_with_a_plain_scan() -> None:
    rng = random.Random(22)
    pieces = [b"[", b"]", b"{", b"}", b'"', b"\\", b"\\\\", b'\\"', b"1", b",", b"a"]
    pieces += [b"\\ud800", b"\\udc00", b"\\uD83D\\uDE00", b"\\u0041", b"\\\\ud800"]
    for _ in range(4000):
        body = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        deep, lone = _slow_depth_and_strings(body, 6)
        problem = json_text_problem(body, max_depth=6) or ""
        if lone:
            assert "surrogate" in problem, body
        elif deep:
            assert "deeper" in problem, body
        else:
            assert "deeper" not in problem and "surrogate" not in problem, body


def test_json_text_check_is_linear_on_hostile_bodies() -> None:
    mib = 1 << 20
    hostile = {
        "unterminated escaped quotes": (HOSTILE_STRING, None),
        "quotes only": (b'"' * mib, None),
        "open brackets": (b"[" * mib, "deeper"),
        "nested 64 again and again": ((b"[" * 64 + b"]" * 64) * (mib // 128), None),
        "numbers of 100 digits": (b"[" + (b"1" * 100 + b",") * (mib // 101) + b"1]", None),
        "surrogate pairs": (b'["' + b"\\ud83d\\ude00" * (mib // 12) + b'"]', None),
    }
    for name, (body, expected) in hostile.items():
        start = time.monotonic()
        problem = json_text_problem(body)
        assert time.monotonic() - start < 5, name  # the quadratic check took ~30 min on the first
        assert (problem is None) if expected is None else (expected in problem), (name, problem)


async def test_a_hostile_body_is_answered_at_once_and_holds_nobody_up() -> None:
    async with demo_server() as http:
        start = time.monotonic()
        answer = await http.post("/mock/episodes", content=HOSTILE_STRING, headers=JSON)
        assert answer.status_code == 400 and "JSON" in answer.json()["error"]
        assert (await http.get("/health")).status_code == 200
        assert time.monotonic() - start < 10
    async with demo_serve() as (http, hub, task_id):
        start = time.monotonic()
        answer = await http.post("/simulations", content=HOSTILE_STRING, headers=JSON)
        assert answer.status_code == 400 and "JSON" in answer.json()["error"]
        assert time.monotonic() - start < 10
    start = time.monotonic()
    error = check_line((b'"' + b'\\"' * 20_000).decode() + "\n")
    assert error is not None and time.monotonic() - start < 5


# --- item 7: lone surrogates are refused at the door ------------------------------------------
LONE = '"\\ud800"'


async def test_lone_surrogates_are_refused_and_every_state_stays_readable() -> None:
    async with demo_server() as http:
        answer = await http.post("/mock/episodes", content=f'{{"task_id": {LONE}}}', headers=JSON)
        assert answer.status_code == 400 and "surrogate" in answer.json()["error"]
        episode = (await http.post("/mock/episodes", json={})).json()
        headers, _ = call_tool("create_task", {})
        for title, status in (('"\\ud800x"', 400), ('"ok \\ud83d\\ude00"', 200)):
            body = (
                '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
                f'"create_task", "arguments": {{"user_id": "ana", "title": {title}}}, '
                f'"_meta": {json.dumps(META)}}}}}'
            )
            reply = await http.post(episode["agent_mcp"], content=body, headers=headers)
            assert reply.status_code == status, reply.text
            if status == 400:
                assert "surrogate" in reply.json()["error"]["message"]
            state = await http.get(f"/mock/episodes/{episode['episode_id']}/state")
            assert state.status_code == 200
        assert "ok \U0001f600" in state.text  # a real pair is kept, as text
    async with demo_serve() as (http, hub, task_id):
        refused = await http.post("/simulations", content=f'{{"task_id": {LONE}}}', headers=JSON)
        assert refused.status_code == 400 and "surrogate" in refused.json()["error"]
        created = (await http.post("/simulations", json={"task_id": task_id})).json()
        headers, _ = call_tool("send_message_to_user", {})
        body = (
            '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": '
            f'"send_message_to_user", "arguments": {{"message": {LONE}}}, '
            f'"_meta": {json.dumps(META)}}}}}'
        )
        reply = await http.post(created["mcp"], content=body, headers=headers)
        assert reply.status_code == 400 and "surrogate" in reply.json()["error"]["message"]
        view = await http.get(f"/simulations/{created['simulation_id']}")
        assert view.status_code == 200 and view.json()["info"]["status"] == "open"
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "x"}}
    ).replace('"x"', f'"x", "arguments": {{"title": {LONE}}}')
    error = check_line(line)
    assert error is not None and error.id == 3 and "surrogate" in error.error.message


async def test_a_lone_surrogate_from_inside_is_written_escaped() -> None:
    """No client can store one, but a model's output on the harness's in-process path could:
    then the state and the simulation are still readable, the surrogate written as an escape."""
    settings = ServerSettings(allowed_hosts=(*LOOPBACK_HOSTS, "testserver"))
    app = create_app(domain_names=["mock"], data_dir=DEMO_DIR, settings=settings)
    async with app.router.lifespan_context(app), InProcess(app).http() as http:
        episode = app.state.tau.store.create("mock", None)
        episode.call("agent", "create_task", {"user_id": "ana", "title": "\ud800x"})
        state = await http.get(f"/mock/episodes/{episode.id}/state")
        assert state.status_code == 200 and '"\\ud800x"' in state.text
    async with demo_serve() as (http, hub, task_id):
        created = (await http.post("/simulations", json={"task_id": task_id})).json()
        simulation = hub.get(created["simulation_id"])
        simulation.record = SimulationRecord.trusted(
            {**simulation.view(), "messages": [{"content": "\udc00"}]}
        )
        view = await http.get(f"/simulations/{created['simulation_id']}")
        assert view.status_code == 200 and view.json()["messages"][0]["content"] == "\udc00"


# --- item 8: serve's errors are JSON everywhere -----------------------------------------------
async def test_serve_answers_every_error_in_json() -> None:
    async with demo_serve() as (http, hub, task_id):
        created = (await http.post("/simulations", json={"task_id": task_id})).json()
        sim_path = f"/simulations/{created['simulation_id']}"
        answers = {
            "405": await http.get(sim_path + "/end"),
            "406": await http.post(
                created["mcp"],
                content=mcp_request("ping", {})[1],
                headers={**mcp_request("ping", {})[0], "accept": "text/plain"},
            ),
            "404 route": await http.get("/nowhere"),
            "400 bad JSON": await http.post("/simulations", content=b"{", headers=JSON),
            "400 not an object": await http.post("/simulations", json=[1]),
            "100k-deep [": await http.post("/simulations", content=b"[" * 100_000, headers=JSON),
            "5,000-digit trial": await http.post(
                "/simulations", content=b'{"trial": ' + b"7" * 5000 + b"}", headers=JSON
            ),
            "surrogate task id": await http.post(
                "/simulations", content=f'{{"task_id": {LONE}}}', headers=JSON
            ),
        }
        for label, answer in answers.items():
            assert answer.status_code >= 400, label
            assert answer.headers["content-type"].startswith("application/json"), label
            assert answer.json(), label
        assert answers["405"].status_code == 405 and answers["406"].status_code == 406
        # Tool arguments nested 900 deep: refused at the door; the simulation plays on.
        deep: object = "x"
        for _ in range(900):
            deep = [deep]
        headers, body = call_tool("create_task", {"user_id": "ana", "title": deep})
        reply = await http.post(created["mcp"], content=body, headers=headers)
        assert reply.status_code == 400 and "deeper" in reply.json()["error"]["message"]
        view = await http.get(sim_path)
        assert view.status_code == 200 and view.json()["info"]["status"] == "open"
        # An unexpected failure inside a route is a JSON 500 naming only its type.
        hub.get = _boom  # type: ignore[method-assign]
        crashed = await http.get(sim_path)
        assert crashed.status_code == 500
        assert crashed.json() == {"error": "internal server error (RuntimeError)"}


def _boom(simulation_id: str):
    raise RuntimeError("a secret detail that must not reach the client")


# --- item 5: serve's connection policy --------------------------------------------------------
@pytest.mark.e2e
def test_serve_keeps_the_connection_policy_of_tau_server() -> None:
    from tests.support.connections import assert_connection_policy
    from tests.support.server import spawned

    command = [sys.executable, "-c", "from tau_mcp.harness.cli import main; main()", "serve"]
    command += ["--domain", "mock", "--user", "scripted", "--judge-llm", "none"]
    command += ["--data-dir", str(DEMO_DIR), "--port", "{port}"]
    command += ["--header-timeout", "1", "--body-timeout", "1", "--max-connections", "6"]
    with spawned(command, "/health") as base:
        assert_connection_policy(base, "/simulations", connections=6)
