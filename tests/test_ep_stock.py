"""Eval Protocol's stock benchmark machinery (`evaluation_test` + `MCPGymRolloutProcessor`,
which launches the server script itself) against tau-mcp's drop-in server script, with EP's
LiteLLM policy and EP's simulated user both answered by the fake chat server. Each row must
finish, and the score the server grades must equal what `tau-harness evaluate` gives the same
trajectory.

EP pins mcp<2, so it runs from its own virtualenv: $TAU_EP_PYTHON (.ci/run builds one).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.fake_llm_server import call, text
from tests.support.server import DATA_DIR, free_port

pytestmark = [pytest.mark.needs_data, pytest.mark.e2e]

BENCHMARK = Path(__file__).parent / "ep" / "ep_stock_benchmark.py"
AGENT, USER = "fake-ep-agent", "fake-ep-user"
GOOD = {"user_id": "user_1", "title": "Important Meeting"}

# (task, agent's tool call, server grade expected)
CASES = [
    ("create_task_1", call("create_task", **GOOD), 1.0),
    ("create_task_1_with_env_assertions", call("create_task", user_id="user_1", title="x"), 0.0),
    ("impossible_task_1", call("transfer_to_human_agents", summary="cannot do that"), 1.0),
]


def _ep_python() -> str:
    python = os.environ.get("TAU_EP_PYTHON")
    if not python or not Path(python).exists():
        pytest.skip("eval-protocol not available: set TAU_EP_PYTHON (.ci/run builds its venv)")
    return python


def _run_stock_benchmark(python: str, fake, tmp_path: Path) -> dict[str, dict]:
    """EP's stock benchmark over `tmp_path/rows.jsonl`, in EP's own virtualenv: each row's
    graded record, by task id."""
    out = tmp_path / "graded.jsonl"
    shutil.copy(BENCHMARK, tmp_path / "test_tau_mcp_ep.py")  # outside our pytest config
    ep_bin = str(Path(python).parent)
    env = {k: os.environ[k] for k in ("HOME", "LANG", "TMPDIR") if k in os.environ}
    env.update(
        PATH=ep_bin + os.pathsep + os.environ.get("PATH", ""),  # `python` is EP's, as for its users
        TAU_MCP_PYTHON=sys.executable,  # where the server script finds tau-mcp
        TAU_MCP_DATA_DIR=str(DATA_DIR),  # EP's vendored tau2 reads TAU2_DATA_DIR its own way
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        TAU_EP_ROWS=str(tmp_path / "rows.jsonl"),
        TAU_EP_PORT=str(free_port()),
        TAU_EP_MODEL=f"openai/{AGENT}",
        TAU_EP_API_BASE=fake.api_base,
        TAU_EP_API_KEY="fake-key",
        TAU_EP_OUT=str(out),
        TAU_EP_SERVER_SCRIPT=str(
            Path(__file__).parents[1] / "servers" / "integrations" / "ep_server.py"
        ),
    )
    run = subprocess.run(
        [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_tau_mcp_ep.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    return {r["task_id"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_ep_stock_benchmark_rows_graded_like_evaluate(fake, tmp_path: Path) -> None:
    python = _ep_python()
    from tau_mcp.harness.integrations.ep_rows import ep_rows, to_jsonl
    from tau_mcp.servers.domains.registry import load_domains

    domain = load_domains(["mock"], DATA_DIR)["mock"]
    # EP switches on litellm's response cache; two mock tasks share a scenario, and a cached
    # reply would both skip the fake server's script and (litellm 1.105) import proxy-only
    # modules EP does not install. Real runs want fresh replies per row anyway.
    user_args = {**fake.llm_args(), "temperature": 0.0, "caching": False}
    rows = ep_rows(domain, None, [c[0] for c in CASES], f"openai/{USER}", user_args)
    (tmp_path / "rows.jsonl").write_text(to_jsonl(rows))
    for index, (task_id, agent_call, _) in enumerate(CASES):
        # EP's user speaks first, the policy calls a tool, then answers; the user hangs up.
        # Every reply differs so litellm's cache (which EP's policy turns on) never answers.
        fake.script(USER, text(f"Hello, row {index}: {task_id}."), text(f"Bye {index} ###STOP###"))
        fake.script(AGENT, agent_call, text(f"All done for row {index}."))

    graded = _run_stock_benchmark(python, fake, tmp_path)
    assert set(graded) == {c[0] for c in CASES}
    for task_id, _, expected in CASES:
        record = graded[task_id]
        assert record["termination_reason"] == "user_stop", json.dumps(record, indent=1)[-3000:]
        assert record["score"] == expected, record["grade"]
        assert record["grade"]["needs_conversation"] == []

    # The same trajectories, re-graded from scratch by `tau-harness evaluate`.
    from tau_mcp.harness.cli import app
    from tau_mcp.harness.integrations.ep_trajectories import simulation_from_ep

    sims = [
        simulation_from_ep(r["task_id"], r["messages"], r["termination_reason"])
        for r in graded.values()
    ]
    calls = {
        s["task_id"]: [c for m in s["messages"] for c in m.get("tool_calls") or []] for s in sims
    }
    assert calls["create_task_1"] == [
        {
            "id": calls["create_task_1"][0]["id"],
            "name": "create_task",
            "arguments": GOOD,
            "requestor": "assistant",
        }
    ]
    (tmp_path / "sims.json").write_text(json.dumps(sims))
    result = CliRunner().invoke(
        app,
        [
            "evaluate",
            "--domain",
            "mock",
            "--input",
            str(tmp_path / "sims.json"),
            "--save-to",
            str(tmp_path / "regraded.json"),
            "--judge-llm",
            "none",
            "--data-dir",
            str(DATA_DIR),
        ],
    )
    assert result.exit_code == 0, result.output
    regraded = json.loads((tmp_path / "regraded.json").read_text())["simulations"]
    rewards = {s["task_id"]: s["reward_info"]["reward"] for s in regraded}
    assert rewards == {task_id: graded[task_id]["score"] for task_id in graded}


def test_an_ep_row_with_faults_is_a_robustness_session(fake, tmp_path: Path) -> None:
    """A row whose config names faults (`export ep-rows --faults`, docs/faults.md): EP's policy
    meets the injected fault as the tool's error, its retry goes through, the grade is the end
    state's as without faults."""
    python = _ep_python()
    from tau_mcp.harness.integrations.ep_rows import ep_rows, to_jsonl
    from tau_mcp.servers.domains.registry import load_domains

    domain = load_domains(["mock"], DATA_DIR)["mock"]
    user_args = {**fake.llm_args(), "temperature": 0.0, "caching": False}
    rows = ep_rows(
        domain, None, ["create_task_1"], f"openai/{USER}", user_args, faults="transient=1"
    )
    (tmp_path / "rows.jsonl").write_text(to_jsonl(rows))
    fake.script(USER, text("Hello, faulted row."), text("Bye faulted ###STOP###"))
    fake.script(AGENT, call("create_task", **GOOD), call("create_task", **GOOD), text("Done."))
    record = _run_stock_benchmark(python, fake, tmp_path)["create_task_1"]
    assert record["termination_reason"] == "user_stop", json.dumps(record, indent=1)[-3000:]
    tools = [m for m in record["messages"] if m.get("role") == "tool"]
    assert "Service temporarily unavailable (HTTP 503)" in str(tools[0].get("content"))
    assert "Important Meeting" in str(tools[1].get("content"))
    assert record["score"] == 1.0, record["grade"]
