"""The τ-bench domains on tau-mcp's other surfaces, a sample each: `tau-harness serve` with an
outside MCP client, Gymnasium, the Eval Protocol endpoint, reports, `view --why`, and the tau2
leaderboard refusing them in one sentence. Everywhere the original's conversation rules hold:
the customer speaks first."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.results.convert import convert
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import make_hub
from tests.support import taubench as tb
from tests.support.harness import mcp_backend

pytestmark = pytest.mark.needs_data("taubench")

TASK = "test_3"  # airline: two agent actions, no outputs
cli = CliRunner()


async def test_serve_an_outside_mcp_agent_plays_the_gold_plan() -> None:
    domain = tb.domains()["tau-bench-airline"]
    config = RunConfig(domain=domain.name, agent="mcp", user="scripted")
    async with mcp_backend(domain) as backend:
        hub = make_hub(backend, domain, config, None)
        try:
            async with hosted(hub, None) as base:
                async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
                    created = (await http.post("/simulations", json={"task_id": TASK})).json()
                    url = base + created["mcp"]
                    async with FastMCPClient(StreamableHttpTransport(url)) as client:
                        assert "tau2" not in (client.instructions or "")

                        async def call(name: str, arguments: dict) -> tuple[str, bool]:
                            result = await client.call_tool(name, arguments, raise_on_error=False)
                            text = "".join(getattr(b, "text", "") for b in result.content)
                            return text, result.is_error

                        # no greeting: the customer has spoken; the gold actions, then a reply
                        for action in domain.task(TASK).evaluation_criteria.actions:
                            assert not (await call(action.name, dict(action.arguments)))[1]
                        text, _ = await call("send_message_to_user", {"message": "Done."})
                        assert "ended the conversation" in text
                    sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
        finally:
            await hub.close()
    assert sim["messages"][0]["role"] == "user"  # the customer opens, as in the original
    assert sim["termination_reason"] == "user_stop"
    assert sim["reward_info"]["reward"] == 1.0
    assert sim["reward_info"]["original_reward_info"]["info"]["r_actions"] == 1.0


def test_gymnasium_the_first_observation_is_the_customers() -> None:
    gym = pytest.importorskip("gymnasium", reason="gymnasium not installed")
    import tau_mcp.harness.integrations.gym  # noqa: F401 - registers the ids
    from tests.support.gym import gold_policy

    env = gym.make("tau-mcp/Agent-v0", domain="tau-bench-airline", user="scripted")
    try:
        observation, info = env.reset(seed=3, options={"task_id": TASK})
        assert observation.startswith("user:")
        policy = gold_policy(env.unwrapped.driver.domain.task(TASK))
        next(policy)
        for _ in range(30):
            observation, reward, terminated, truncated, info = env.step(policy.send(observation))
            if terminated or truncated:
                break
        assert terminated and reward == 1.0
    finally:
        env.close()


async def test_the_eval_protocol_endpoint_grades_a_session() -> None:
    from tests.support.server import MCP_HEADERS, mcp_initialize

    path = "/tau-bench-airline/mcp"
    extra = {"session_id": "tb1", "seed": 1, "config": {"task_id": TASK}}
    async with tb.serving() as srv, srv.http() as http:
        opened = await http.post(
            path, json=mcp_initialize("reward-kit", "1.0.0", _extra=extra), headers=MCP_HEADERS
        )
        assert opened.status_code == 200, opened.text
        assert "tau2" not in opened.json()["result"]["instructions"]
        session = {**MCP_HEADERS, "mcp-session-id": opened.headers["mcp-session-id"]}
        task = tb.domains()["tau-bench-airline"].task(TASK)
        for number, action in enumerate(task.evaluation_criteria.actions):
            call = {
                "jsonrpc": "2.0",
                "id": number + 2,
                "method": "tools/call",
                "params": {"name": action.name, "arguments": action.arguments},
            }
            called = await http.post(path, json=call, headers=session)
            assert called.status_code == 200, called.text
        reward = await http.get(
            "/tau-bench-airline/control/reward", headers={"mcp-session-id": "tb1"}
        )
        assert reward.status_code == 200, reward.text
    assert reward.json()["grade"]["reward_breakdown"]["DB"] == 1.0


def test_reports_and_why_and_the_leaderboard_refusal(tmp_path: Path) -> None:
    source = tb.FIXTURES / "requests" / "retail_tool-calling_llm_t0-1-2" / "results.json"
    convert(source, "tau-mcp", tmp_path / "ours.json")
    graded = tmp_path / "graded.json"
    done = cli.invoke(
        app,
        [
            "evaluate",
            "--input",
            str(tmp_path / "ours.json"),
            "--save-to",
            str(graded),
            "--domain",
            "tau-bench-retail",
        ],
    )
    assert done.exit_code == 0, done.output
    assert "τ-bench pass^1 (its run.py)" in done.output
    report = cli.invoke(app, ["report", str(graded), "--format", "json"])
    assert report.exit_code == 0, report.output
    run = json.loads(report.output)["runs"][0]
    assert run["original"] == {"avg_reward": 0.0, "pass_hat": {"1": 0.0}}
    assert run["failures"]["failed"] == 3
    why = cli.invoke(app, ["view", str(graded), "--why"])
    assert why.exit_code == 0 and "why:" in why.output
    refused = cli.invoke(app, ["submit", "verify-trajs", str(graded)])
    assert refused.exit_code == 1
    assert "the tau2 leaderboard has no τ-bench track" in refused.output
    board = cli.invoke(app, ["leaderboard", "-d", "tau-bench-retail"])
    assert board.exit_code == 1
    assert board.output.count("error:") == 1 and "no τ-bench track" in board.output
