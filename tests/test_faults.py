"""Seeded tool faults on real airline tools, through the server's real MCP endpoints: what the
agent sees, what the database keeps, what the next call does, per fault kind (docs/faults.md);
the plan's draws, its option text and profiles, and bad input refused in one sentence."""

from __future__ import annotations

import functools
import json
import time
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from tau_mcp.servers.engine.faults import (
    FaultError,
    FaultKind,
    FaultPlan,
    is_retryable_fault,
    parse_faults,
)
from tests.support.harness import load as load_domain

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
RESERVATION = "Q69X3R"  # task 1's reservation (raj_sanchez_7340), not yet cancelled
CANCEL = ("cancel_reservation", {"reservation_id": RESERVATION})
READ = ("get_reservation_details", {"reservation_id": RESERVATION})
USER = ("get_user_details", {"user_id": "raj_sanchez_7340"})


@functools.cache
def load(name: str):
    """Each domain once for the module (loading airline takes a while)."""
    return load_domain(name)


class Session:
    """One episode of task 1 on an in-process tau-server, its agent tools called over MCP."""

    def __init__(self, client: httpx.AsyncClient, episode: dict[str, Any]) -> None:
        self.client, self.episode = client, episode
        self.ident = 0

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.ident += 1
        body = {
            "jsonrpc": "2.0",
            "id": self.ident,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META},
        }
        headers = {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
        reply = await self.client.post(
            self.episode["agent_mcp"], content=json.dumps(body), headers=headers
        )
        assert reply.status_code == 200, reply.text
        return reply.json()["result"]

    async def hash(self) -> str:
        path = f"/airline/episodes/{self.episode['episode_id']}/hash"
        return (await self.client.get(path)).json()["agent_db"]

    async def faults(self) -> dict[str, Any]:
        path = f"/airline/episodes/{self.episode['episode_id']}/faults"
        return (await self.client.get(path)).json()


@asynccontextmanager
async def served(faults: Any, task_id: str = "1", **body: Any):
    from tau_mcp.servers.app import ServerSettings, create_app

    app = create_app({"airline": load("airline")}, settings=ServerSettings(warm=False))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            created = await client.post(
                "/airline/episodes", json={"task_id": task_id, "faults": faults, **body}
            )
            assert created.status_code == 201, created.text
            yield Session(client, created.json())


def text_of(result: dict[str, Any]) -> str:
    return result["content"][0]["text"]


def fault_of(result: dict[str, Any]) -> dict[str, Any] | None:
    return (result.get("_meta") or {}).get("tau-mcp/fault")


def status_of(result: dict[str, Any]) -> Any:
    return json.loads(text_of(result)).get("status")


pytestmark = pytest.mark.needs_data("airline")


# --- each kind on real tools -------------------------------------------------------------------
async def test_transient_fails_once_changes_nothing_and_the_retry_succeeds():
    clean = await _clean_hashes()
    async with served("transient=1") as s:
        first = await s.call(*CANCEL)
        assert first["isError"] is True
        assert (
            text_of(first) == "Error: Service temporarily unavailable (HTTP 503); please try again."
        )
        assert fault_of(first) == {
            "call": 0,
            "tool": "cancel_reservation",
            "kind": "transient",
            "new": True,
        }
        assert await s.hash() == clean["before"]  # the write never ran
        again = await s.call(*CANCEL)  # the same call again goes through
        assert again["isError"] is False and fault_of(again) is None
        assert json.loads(text_of(again))["status"] == "cancelled"
        assert await s.hash() == clean["after"]
        log = await s.faults()
        assert log["plan"]["rates"] == {"transient": 1.0}
        assert [f["kind"] for f in log["faults"]] == ["transient"]


async def test_permanent_takes_the_tool_down_for_the_rest_of_the_episode():
    clean = await _clean_hashes()
    # A seed whose draw takes call 0 down and spares call 1: other tools still work.
    plan = parse_faults("permanent=0.5")
    seed = next(
        s
        for s in range(1000)
        if plan.for_episode(s, 0).draw("1", 0, FaultKind.PERMANENT) < 0.5
        and plan.for_episode(s, 0).draw("1", 1, FaultKind.PERMANENT) >= 0.5
        and plan.for_episode(s, 0).draw("1", 3, FaultKind.PERMANENT) >= 0.5
    )
    async with served({"permanent": 0.5, "seed": seed}) as s:
        down = await s.call(*CANCEL)
        assert down["isError"] is True
        expected = "Error: Service unavailable: the service behind cancel_reservation is down."
        assert text_of(down) == expected
        assert await s.hash() == clean["before"]
        other = await s.call(*USER)
        assert other["isError"] is False and fault_of(other) is None
        again = await s.call(*CANCEL)
        assert again["isError"] is True and text_of(again) == expected
        assert fault_of(again)["new"] is False  # the tool is still down, not a new fault
        assert await s.hash() == clean["before"]
        assert (await s.call(*READ))["isError"] is False


async def test_timeout_waits_then_fails_changing_nothing():
    clean = await _clean_hashes()
    async with served({"timeout": 1, "timeout_seconds": 0.2}) as s:
        started = time.perf_counter()
        first = await s.call(*CANCEL)
        waited = time.perf_counter() - started
        assert waited >= 0.2
        assert first["isError"] is True
        assert text_of(first) == "Error: The request timed out after 0.2 seconds."
        assert fault_of(first)["kind"] == "timeout"
        assert await s.hash() == clean["before"]
        again = await s.call(*CANCEL)
        assert again["isError"] is False and await s.hash() == clean["after"]


async def test_rate_limit_says_when_to_retry_and_refuses_calls_before_then():
    clean = await _clean_hashes()
    async with served("rate_limit=1,rate_limit_calls=2") as s:
        first = await s.call(*CANCEL)
        assert text_of(first) == (
            "Error: Rate limit exceeded (HTTP 429): too many requests; the next 2 request(s) "
            "will be refused, retry after that."
        )
        second = await s.call(*USER)  # any tool, inside the window
        assert second["isError"] is True and "the next 1 request(s)" in text_of(second)
        third = await s.call(*CANCEL)
        assert (
            text_of(third) == "Error: Rate limit exceeded (HTTP 429): too many requests; retry now."
        )
        assert [fault_of(r)["new"] for r in (first, second, third)] == [True, False, False]
        assert await s.hash() == clean["before"]
        fourth = await s.call(*CANCEL)  # after the window: through
        assert fourth["isError"] is False and await s.hash() == clean["after"]


async def test_stale_read_returns_the_state_before_the_last_write_once():
    clean = await _clean_hashes()
    async with served("stale_read=1") as s:
        before = await s.call(*READ)  # no write yet: nothing older to show
        assert fault_of(before) is None and status_of(before) is None
        written = await s.call(*CANCEL)
        assert written["isError"] is False and status_of(written) == "cancelled"
        stale = await s.call(*READ)
        assert stale["isError"] is False
        assert text_of(stale) == text_of(before)  # as before the cancellation
        assert fault_of(stale)["kind"] == "stale_read"
        fresh = await s.call(*READ)  # once per write
        assert fault_of(fresh) is None and status_of(fresh) == "cancelled"
        assert await s.hash() == clean["after"]  # the write itself stands


async def test_slow_succeeds_after_its_delay():
    clean = await _clean_hashes()
    async with served({"slow": 1.0, "slow_seconds": 0.2}) as s:
        started = time.perf_counter()
        result = await s.call(*CANCEL)
        assert time.perf_counter() - started >= 0.2
        assert result["isError"] is False and status_of(result) == "cancelled"
        assert fault_of(result)["kind"] == "slow"
        assert await s.hash() == clean["after"]


async def _clean_hashes() -> dict[str, str]:
    """Task 1's agent DB hash before and after the cancellation, in a clean episode."""
    async with served(None) as s:
        before = await s.hash()
        assert (await s.call(*CANCEL))["isError"] is False
        return {"before": before, "after": await s.hash()}


@pytest.mark.needs_data("telecom")
async def test_the_users_tools_are_never_faulted():
    from tau_mcp.servers.engine.episode import EpisodeStore
    from tau_mcp.servers.mcp_calls import call_on_episode

    telecom = load("telecom")
    store = EpisodeStore({"telecom": telecom})
    plan = parse_faults("transient=1")
    episode = store.create("telecom", telecom.task_ids("base")[0], faults=plan)
    user_call = await call_on_episode(episode, "user", "check_status_bar", {})
    assert user_call.fault is None and not user_call.error
    agent_call = await call_on_episode(
        episode, "agent", "get_customer_by_phone", {"phone_number": "x"}
    )
    assert agent_call.fault is not None and agent_call.error


async def test_faulted_answers_are_the_same_bytes_on_the_short_path_and_fastmcp(monkeypatch):
    calls = [CANCEL, USER, CANCEL, READ, ("no_such_tool", {})]
    answers = {}
    for full in (False, True):
        if full:
            monkeypatch.setenv("TAU_MCP_FULL_PATH", "1")
        else:
            monkeypatch.delenv("TAU_MCP_FULL_PATH", raising=False)
        async with served("transient=0.5,rate_limit=0.3,seed=4") as s:
            answers[full] = [await s.call(*c) for c in calls]
    assert answers[False] == answers[True]
    assert any(fault_of(r) for r in answers[False])


async def test_an_eval_protocol_session_gets_its_row_config_faults_and_seed():
    from tau_mcp.servers.app import ServerSettings, TauServer
    from tau_mcp.servers.mcp_calls import as_json_object, call_on_episode

    server = TauServer({"airline": load("airline")}, ServerSettings(warm=False))
    extra = {"session_id": "s1", "seed": 17, "config": {"task_id": "1", "faults": "transient=1"}}
    episode = server.ep.open_session("airline", extra)
    assert episode.faults is not None and episode.faults.plan.seed == 17
    outcome = as_json_object(await call_on_episode(episode, "agent", *CANCEL))
    assert outcome.error and json.loads(outcome.text) == {
        "error": "Service temporarily unavailable (HTTP 503); please try again."
    }


# --- the plan -----------------------------------------------------------------------------------
def test_same_seed_same_draws_another_seed_other_draws():
    plan = parse_faults("transient=0.3")
    a, b = plan.for_episode(7, 0), plan.for_episode(7, 0)
    draws = [a.draw("1", i, FaultKind.TRANSIENT) for i in range(200)]
    assert draws == [b.draw("1", i, FaultKind.TRANSIENT) for i in range(200)]
    other = [plan.for_episode(8, 0).draw("1", i, FaultKind.TRANSIENT) for i in range(200)]
    assert other != draws
    trial = [plan.for_episode(7, 1).draw("1", i, FaultKind.TRANSIENT) for i in range(200)]
    assert trial != draws
    hits = sum(d < 0.3 for d in draws)
    assert 35 <= hits <= 85  # about 60 of 200


def test_option_text_mapping_and_json_layout_read_the_same_plan():
    text = parse_faults("transient=0.1, rate_limit=0.05,timeout_seconds=0.2")
    flat = parse_faults({"transient": 0.1, "rate_limit": 0.05, "timeout_seconds": 0.2})
    assert text == flat
    assert parse_faults(text.body()) == text
    assert text.spec() == "transient=0.1,rate_limit=0.05,timeout_seconds=0.2"
    assert parse_faults("") is None and parse_faults({}) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("bogus=0.1", "unknown fault kind 'bogus' in --faults"),
        ("transient=1.5", "--faults: the rate of transient must be between 0 and 1, not 1.5"),
        ("transient=-0.1", "must be between 0 and 1"),
        ("transient=lots", "--faults: transient must be a number, not 'lots'"),
        ("transient", "--faults takes kind=rate pairs"),
        ("rate_limit_calls=0.5", "rate_limit_calls must be a whole number"),
        ("timeout_seconds=99", "timeout_seconds must be between 0 and 30"),
        (["transient"], "--faults must be text"),
    ],
)
def test_bad_plans_are_refused_in_one_sentence(value, message):
    with pytest.raises(FaultError) as caught:
        parse_faults(value)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_profiles_ship_and_a_broken_profile_file_is_one_sentence(tmp_path, monkeypatch):
    from tau_mcp.servers.engine.fault_profiles import available, load_profile, resolve_faults

    names = {p.name for p in available()}
    assert {"flaky", "retryable", "degraded", "outage", "chaos"} <= names
    assert load_profile("retryable").plan.spec() == "transient=0.2,rate_limit=0.1"
    over = resolve_faults("timeout=0.3", "flaky")
    assert over.spec() == "transient=0.1,timeout=0.3,rate_limit=0.05" and over.profile == "flaky"
    broken = tmp_path / "broken.toml"
    broken.write_text("transient = [0.1\n")
    with pytest.raises(FaultError, match="does not parse as TOML"):
        load_profile(str(broken))
    empty = tmp_path / "empty.toml"
    empty.write_text('description = "nothing"\n')
    with pytest.raises(FaultError, match="gives no fault kind a rate above 0"):
        load_profile(str(empty))
    with pytest.raises(FaultError, match="unknown fault profile 'nope'"):
        load_profile("nope")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "flaky.toml").write_text("slow = 0.5\n")  # a user's profile shadows a shipped one
    monkeypatch.setenv("TAU_FAULT_PROFILES_DIR", str(mine))
    assert load_profile("flaky").plan.spec() == "slow=0.5"


def test_retryable_texts_are_recognised_on_both_result_shapes():
    from tau_mcp.servers.engine import faults

    for text in (faults.TRANSIENT_TEXT, faults.RATE_LIMIT_LAST_TEXT, "The request timed out"):
        assert is_retryable_fault(f"Error: {text}")
        assert is_retryable_fault(json.dumps({"error": text}))
    assert not is_retryable_fault("Error: " + faults.PERMANENT_TEXT.format(tool="x"))
    assert not is_retryable_fault("Error: Reservation not found")


async def test_a_bad_plan_in_the_episode_body_is_a_400_and_no_episode():
    from tau_mcp.servers.app import ServerSettings, create_app

    app = create_app({"airline": load("airline")}, settings=ServerSettings(warm=False))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            for body, said in (
                ({"faults": "bogus=1"}, "unknown fault kind 'bogus' in 'faults'"),
                ({"faults": {"transient": 2}}, "the rate of transient must be between 0 and 1"),
                ({"faults": 3}, "'faults' must be text, an object or null"),
                ({"faults_profile": "/etc/passwd"}, "unknown fault profile '/etc/passwd'"),
            ):
                reply = await client.post("/airline/episodes", json={"episode_id": "x", **body})
                assert reply.status_code == 400, body
                assert said in reply.json()["error"]
            assert len(app.state.tau.store) == 0


def test_a_plan_without_any_rate_is_no_plan():
    from tau_mcp.servers.engine.fault_profiles import resolve_faults

    assert resolve_faults("transient=0", None) is None
    assert FaultPlan(rates={}).active is False


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--faults", "bogus=0.1"], "error: unknown fault kind 'bogus' in --faults"),
        (["--faults", "transient=1.5"], "the rate of transient must be between 0 and 1, not 1.5"),
        (["--faults-profile", "{broken}"], "does not parse as TOML"),
        (["--faults-profile", "nope"], "error: unknown fault profile 'nope'"),
    ],
)
def test_bad_fault_options_are_one_sentence_and_a_nonzero_exit(tmp_path, options, said):
    from typer.testing import CliRunner

    from tau_mcp.harness.cli import app
    from tau_mcp.servers.cli import app as server_app
    from tests.support.data import DEMO_DIR

    broken = tmp_path / "broken.toml"
    broken.write_text("transient = [0.1\n")
    options = [str(broken) if o == "{broken}" else o for o in options]
    save_to = tmp_path / "out.json"
    runs = {
        "run": (app, ["run", "--domain", "mock", "--agent", "oracle", "--user", "scripted"]),
        "play": (app, ["play", "--domain", "mock", "--task-id", "demo_create", "--as", "user"]),
        "serve": (app, ["serve", "--domain", "mock", "--user", "scripted", "--port", "0"]),
        "tau-server": (server_app, ["serve", "--domains", "mock", "--port", "0"]),
    }
    for name, (program, command) in runs.items():
        data = ["--data-dir", str(DEMO_DIR)]
        extra = ["--save-to", str(save_to)] if name == "run" else []
        result = CliRunner().invoke(program, [*command, *data, *extra, *options])
        assert result.exit_code != 0, name
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and said in lines[0], (name, result.output)
        assert not save_to.exists()


def test_exported_eval_protocol_rows_carry_the_faults():
    from typer.testing import CliRunner

    from tau_mcp.harness.cli import app

    result = CliRunner().invoke(
        app,
        ["export", "ep-rows", "--domain", "airline", "--task-ids", "1,2", "--faults-profile", "flaky", "-o", "-"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]
    assert [r["environment_context"]["faults"] for r in rows] == [
        "transient=0.1,rate_limit=0.05"
    ] * 2
