"""Eval Protocol integration pieces, in-process: the one-domain layout EP's rollout processor
expects (/mcp, /control/*), the exported rows, and the server's grade in /control/reward."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app as harness_app
from tau_mcp.servers.integrations.ep_stock import build_app, build_parser
from tests.support.server import DATA_DIR, InProcess, mcp_initialize

pytestmark = pytest.mark.needs_data
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _initialize(session_id: str, config: dict) -> dict:
    return mcp_initialize(
        "reward-kit", "1.0.0", _extra={"session_id": session_id, "config": config}
    )


async def _session(client, session_id: str, config: dict) -> str:
    answer = await client.post("/mcp/", json=_initialize(session_id, config), headers=ACCEPT)
    assert answer.status_code == 200, answer.text
    transport = answer.headers["mcp-session-id"]
    await client.post(
        "/mcp/",
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers={**ACCEPT, "mcp-session-id": transport},
    )
    return transport


async def _call(client, transport: str, name: str, arguments: dict) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    answer = await client.post("/mcp/", json=body, headers={**ACCEPT, "mcp-session-id": transport})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


async def _reward(client, session_id: str) -> dict:
    answer = await client.get("/control/reward", headers={"mcp-session-id": session_id})
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_parser_takes_eps_server_arguments() -> None:
    args = build_parser().parse_args(["--port", "9700", "--domain", "retail", "--seed", "42"])
    assert (args.port, args.domain, args.seed) == (9700, "retail", 42)


async def test_one_domain_layout_grades_sessions() -> None:
    wrapped = build_app("mock", str(DATA_DIR), allow_hosts=("testserver",))
    inner = wrapped.app
    async with inner.router.lifespan_context(inner):
        async with InProcess(wrapped).http() as client:
            # A task with DB + ENV_ASSERTION: the session starts from the task's state.
            transport = await _session(
                client, "s1", {"domain": "mock", "task_id": "create_task_1_with_env_assertions"}
            )
            state = (
                await client.get("/control/initial_state", headers={"mcp-session-id": "s1"})
            ).json()
            assert state["task_id"] == "create_task_1_with_env_assertions"
            before = await _reward(client, "s1")
            assert before["reward"] == 0.0
            assert before["grade"]["reward_breakdown"] == {"DB": 0.0, "ENV_ASSERTION": 0.0}
            await _call(
                client,
                transport,
                "create_task",
                {"user_id": "user_1", "title": "Important Meeting"},
            )
            after = await _reward(client, "s1")
            assert after["reward"] == 1.0  # the change since the last report, as EP sums them
            assert after["grade"]["reward"] == 1.0
            assert after["grade"]["reward_breakdown"] == {"DB": 1.0, "ENV_ASSERTION": 1.0}
            assert after["grade"]["action_checks"][0]["action_match"] is True
            assert (await _reward(client, "s1"))["reward"] == 0.0

            # ACTION is graded from the calls the server saw; COMMUNICATE facts need the text.
            transport = await _session(
                client, "s2", {"domain": "mock", "task_id": "impossible_task_1"}
            )
            await _call(client, transport, "transfer_to_human_agents", {"summary": "no"})
            grade = (await _reward(client, "s2"))["grade"]
            assert grade["reward_breakdown"] == {"DB": 1.0, "ACTION": 1.0}
            transport = await _session(
                client, "s3", {"domain": "mock", "task_id": "update_task_with_initialization_data"}
            )
            grade = (await _reward(client, "s3"))["grade"]
            assert grade["needs_conversation"] == ["COMMUNICATE"]
            assert "COMMUNICATE" not in grade["reward_breakdown"]

            # Routes other than /mcp and /control stay where they are.
            assert (await client.get("/health")).json()["domains"] == ["mock"]
            state = (await client.get("/mock/episodes/s1/state")).json()
            assert any(
                t["title"] == "Important Meeting" for t in state["agent_db"]["tasks"].values()
            )


def test_export_ep_rows(tmp_path) -> None:
    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(
        harness_app,
        [
            "export",
            "ep-rows",
            "--domain",
            "mock",
            "--split",
            "base",
            "-o",
            str(out),
            "--data-dir",
            str(DATA_DIR),
            "--user-llm",
            "openai/u",
            "--user-llm-args",
            '{"temperature": 0.5}',
        ],
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 10
    row = next(r for r in rows if r["environment_context"]["task_id"] == "update_task_1")
    assert row["environment_context"] == {"domain": "mock", "task_id": "update_task_1"}
    assert row["user_simulation"]["llm"] == "openai/u"
    assert row["user_simulation"]["llm_args"] == {"temperature": 0.5}
    assert (
        row["input_metadata"]["dataset_info"]["environment_context"] == row["environment_context"]
    )
    assert (
        row["messages"][0]["role"] == "system"
        and "Mock Domain Policy" in row["messages"][0]["content"]
    )
    assert row["evaluation_criteria"]["actions"][0]["name"] == "update_task_status"

    bad = CliRunner().invoke(
        harness_app,
        [
            "export",
            "ep-rows",
            "--domain",
            "mock",
            "--task-ids",
            "nope",
            "-o",
            str(tmp_path / "x.jsonl"),
            "--data-dir",
            str(DATA_DIR),
        ],
    )
    assert bad.exit_code == 1 and "unknown task id" in bad.output
    assert not (tmp_path / "x.jsonl").exists()
