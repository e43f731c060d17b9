"""The outside seat's one rule for how the outside side ends a conversation (docs/seat.md),
checked on each surface that seats an outside policy: Gymnasium (both seats), `tau-harness
serve`'s MCP endpoint, `run --agent cmd`, and the seat itself (a policy that fails to move).
Inspect's and verifiers' checks live with their other tests (test_inspect_tasks.py,
test_integrations_verifiers.py). All on the bundled demo data: no model, no key."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx2
import pytest
from typer.testing import CliRunner

from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall
from tau_mcp.harness.backends.http import in_process_backend
from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.seat import OutsideAgent, Seat, outside_message
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import make_hub
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import load_domain
from tests.support.data import DEMO_DIR

TASK = "demo_create"


def _done(*others: str) -> ChatMessage:
    calls = [ToolCall(id="c1", name="done", arguments={})]
    calls += [ToolCall(id=f"c{i + 2}", name=n, arguments={}) for i, n in enumerate(others)]
    return ChatMessage(role="assistant", content=None, tool_calls=calls)


def test_the_rule_as_the_conversation_records_it() -> None:
    stop = outside_message("agent", _done("get_users"))
    assert (stop.content, stop.tool_calls) == (STOP, None)  # other calls dropped, as the reference
    assert outside_message("user", _done()).tool_calls  # on the user's side `done` is a tool call
    text = ChatMessage(role="assistant", content="Bye")
    assert outside_message("agent", text) is text


# --- Gymnasium --------------------------------------------------------------------------------
@pytest.fixture
def gym():
    gymnasium = pytest.importorskip("gymnasium", reason="gymnasium not installed (the gym extra)")
    import tau_mcp.harness.integrations.gym  # noqa: F401 - registers the ids

    return gymnasium


@pytest.mark.parametrize("action", ["All done here. ###STOP###", "done()"])
def test_gym_agent_ends_with_the_stop_token_or_done(gym, action: str) -> None:
    env = gym.make(
        "tau-mcp/Agent-v0", domain="mock", task_id=TASK, user="scripted", data_dir=str(DEMO_DIR)
    )
    try:
        env.reset(seed=1)
        _, reward, terminated, truncated, info = env.step(action)
        assert (terminated, truncated, reward) == (True, False, 0.0)
        assert info["termination_reason"] == "agent_stop"
        last = info["simulation"]["messages"][-1]
        assert (
            last["role"] == "assistant" and STOP in last["content"] and not last.get("tool_calls")
        )
    finally:
        env.close()


def test_gym_user_ends_with_a_user_stop_token(gym) -> None:
    env = gym.make(
        "tau-mcp/User-v0", domain="mock", task_id=TASK, agent="oracle", data_dir=str(DEMO_DIR)
    )
    try:
        env.reset(seed=1)
        _, _, terminated, _, info = env.step("Please get me a human. ###TRANSFER###")
        assert terminated and info["termination_reason"] == "user_stop"
        again = gym.make(
            "tau-mcp/User-v0", domain="mock", task_id=TASK, agent="oracle", data_dir=str(DEMO_DIR)
        )
        try:  # `done` is the agent side's: from the user it is only words to the agent
            again.reset(seed=1)
            _, _, _, _, info = again.step("done()")
            assert info.get("termination_reason") != "user_stop", info
        finally:
            again.close()
    finally:
        env.close()


# --- tau-harness serve ------------------------------------------------------------------------
async def _served_ending(move: str) -> dict:
    """One served simulation ended by the agent's `move`; its graded view."""
    from tests.test_harness_serve import agent_client

    domain = load_domain("mock", DEMO_DIR)
    backend = await in_process_backend({"mock": domain})
    config = RunConfig(domain="mock", agent="mcp", user="scripted", judge_llm="none")
    hub = make_hub(backend, domain, config)
    try:
        async with hosted(hub) as base, httpx2.AsyncClient(base_url=base, timeout=60) as http:
            created = (await http.post("/simulations", json={"task_id": TASK})).json()
            url = base + created["mcp"]
            async with agent_client("fastmcp", url) as (call, *_):
                greeting, _ = await call("send_message_to_user", {"message": "Hello!"})
                assert greeting  # the customer's opening line
                if move == "end":
                    view = (await http.post(f"/simulations/{created['simulation_id']}/end")).json()
                else:
                    arguments = {"message": "Goodbye. ###STOP###"} if move == "text" else {}
                    name = "send_message_to_user" if move == "text" else "done"
                    answer, error = await call(name, arguments)
                    assert "You have ended the conversation" in answer and not error
                    later, error = await call("send_message_to_user", {"message": "Still there?"})
                    assert error and "has ended (agent_stop)" in later
                    view = (await http.get(f"/simulations/{created['simulation_id']}")).json()
    finally:
        await hub.close()
        await backend.close()
    return view


@pytest.mark.parametrize("move", ["text", "done", "end"])
def test_serve_agent_ends_by_the_rule(move: str) -> None:
    view = asyncio.run(_served_ending(move))
    assert view["termination_reason"] == "agent_stop"
    last = view["messages"][-1]
    assert last["role"] == "assistant" and STOP in last["content"] and not last.get("tool_calls")
    assert view["reward_info"]["reward"] == 0.0


# --- run --agent cmd --------------------------------------------------------------------------
@pytest.mark.e2e
def test_an_agent_program_that_exits_ends_with_the_agent_stop(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    done = CliRunner().invoke(
        app,
        ["run", "--domain", "mock", "--user", "scripted", "--judge-llm", "none",
         "--data-dir", str(DEMO_DIR), "--save-to", str(out), "--task-ids", TASK,
         "--agent", "cmd", "--agent-cmd", f"{sys.executable} -c pass"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    [sim] = json.loads(out.read_text())["simulations"]
    assert sim["termination_reason"] == "agent_stop"
    assert sim["info"]["agent_command"]["exit_code"] == 0
    assert [m["content"] for m in sim["messages"]] == [STOP]


# --- the seat itself ----------------------------------------------------------------------------
async def _failed_move() -> dict:
    domain = load_domain("mock", DEMO_DIR)
    backend = await in_process_backend({"mock": domain})
    config = RunConfig(domain="mock", agent="outside", user="scripted", judge_llm="none")
    runner = SimulationRunner(
        backend, domain, config.replace(max_retries=0), agent_factory=OutsideAgent
    )
    seat = Seat("agent")
    try:
        run = asyncio.ensure_future(seat.host(runner.simulate(domain.task(TASK), 0, 1)))
        await seat.turn()
        assert seat.waiting and seat.participant is not None
        failed = asyncio.ensure_future(seat.move(RuntimeError("model down")))
        record = await run
        seat.close()  # as the seat's owner does once the simulation is over
        assert (await failed).ended
        return record
    finally:
        seat.close()
        await backend.close()


def test_a_policy_that_fails_to_move_fails_the_simulation_not_the_score() -> None:
    record = asyncio.run(_failed_move())
    assert record.termination_reason == "infrastructure_error"
    assert "RuntimeError: model down" in record.info["error"]


def test_an_outside_participant_needs_a_seat() -> None:
    async def unseated() -> None:
        domain = load_domain("mock", DEMO_DIR)
        backend = await in_process_backend({"mock": domain})
        config = RunConfig(domain="mock", agent="outside", user="scripted", judge_llm="none")
        runner = SimulationRunner(backend, domain, config, agent_factory=OutsideAgent)
        try:
            await runner.attempt(domain.task(TASK), 0, 1)
        finally:
            await backend.close()

    with pytest.raises(Exception, match="an outside participant is seated by tau-harness serve"):
        asyncio.run(unseated())
