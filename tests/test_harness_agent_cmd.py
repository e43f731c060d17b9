"""`tau-harness run --agent cmd`: an outside agent program per simulation, through the CLI.

The program is `tests/support/mcp_agent_program.py` (official `mcp` SDK client, the gold plan); its
graded results must equal the `oracle` agent's on the same tasks.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support.data import DEMO_DIR
from tests.support.verdicts import comparable

pytestmark = pytest.mark.e2e
PROGRAM = Path(__file__).parent / "support" / "mcp_agent_program.py"
TASKS = "demo_create,demo_complete,demo_notice,demo_history"


def _run(tmp_path: Path, name: str, *extra: str, exit_code: int = 0) -> tuple[dict, str]:
    out = tmp_path / f"{name}.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--domain",
            "mock",
            "--user",
            "scripted",
            "--judge-llm",
            "none",
            "--data-dir",
            str(DEMO_DIR),
            "--save-to",
            str(out),
            *extra,
        ],
    )
    assert result.exit_code == exit_code, result.output
    return json.loads(out.read_text()), result.output


def _program(*env: str) -> str:
    return " ".join([*env, shlex.quote(sys.executable), shlex.quote(str(PROGRAM))])


def _calls(sim: dict) -> list[tuple[str, str, dict]]:
    return [
        (c["requestor"], c["name"], c["arguments"])
        for m in sim["messages"]
        for c in m.get("tool_calls") or []
    ]


def test_agent_program_scores_as_the_oracle(tmp_path, monkeypatch):
    monkeypatch.setenv("TAU2_DATA_DIR", str(DEMO_DIR))
    cmd, _ = _run(
        tmp_path,
        "cmd",
        "--agent",
        "cmd",
        "--agent-cmd",
        _program(),
        "--task-ids",
        TASKS,
        "--max-concurrency",
        "3",
        "--timeout",
        "120",
    )
    oracle, _ = _run(tmp_path, "oracle", "--agent", "oracle", "--task-ids", TASKS)
    by_task = {s["task_id"]: s for s in oracle["simulations"]}
    assert len(cmd["simulations"]) == len(by_task) == 4
    assert cmd["info"]["agent_info"]["implementation"] == "cmd"
    for sim in cmd["simulations"]:
        reference = by_task[sim["task_id"]]
        assert sim["termination_reason"] == "user_stop", sim["info"]
        assert comparable(sim["reward_info"]) == comparable(reference["reward_info"])
        assert _calls(sim) == _calls(reference)
        command = sim["info"]["agent_command"]
        assert command["exit_code"] == 0 and not command["timed_out"]
        assert f"played {sim['task_id']}" in command["output_tail"]
    assert sorted(s["reward_info"]["reward"] for s in cmd["simulations"]) == sorted(
        s["reward_info"]["reward"] for s in oracle["simulations"]
    )


def test_a_program_that_runs_too_long_is_stopped_and_graded(tmp_path):
    document, _ = _run(
        tmp_path,
        "slow",
        "--agent",
        "cmd",
        "--agent-cmd",
        "sleep 60",
        "--task-ids",
        "demo_create",
        "--timeout",
        "1",
    )
    (sim,) = document["simulations"]
    assert sim["termination_reason"] == "agent_stop"
    assert sim["info"]["agent_command"]["timed_out"] is True
    assert sim["reward_info"]["reward"] == 0.0


def test_a_program_that_fails_at_once_is_an_infrastructure_error(tmp_path):
    document, printed = _run(
        tmp_path,
        "broken",
        "--agent",
        "cmd",
        "--agent-cmd",
        "echo cannot start >&2; exit 3",
        "--task-ids",
        "demo_create",
        "--max-retries",
        "0",
        exit_code=1,  # a run with an infrastructure error exits nonzero
    )
    (sim,) = document["simulations"]
    assert sim["termination_reason"] == "infrastructure_error"
    assert "exited with code 3" in sim["info"]["error"]
    assert "cannot start" in sim["info"]["error"]


def test_agent_cmd_options_are_checked(tmp_path):
    runner = CliRunner()
    base = ["run", "--domain", "mock", "--user", "scripted", "--data-dir", str(DEMO_DIR)]
    missing = runner.invoke(app, [*base, "--agent", "cmd", "--save-to", str(tmp_path / "a.json")])
    assert missing.exit_code == 1 and "--agent-cmd" in missing.output
    stray = runner.invoke(
        app, [*base, "--agent", "oracle", "--agent-cmd", "x", "--save-to", str(tmp_path / "b.json")]
    )
    assert stray.exit_code == 1 and "--agent cmd" in stray.output
