"""A domain pack in a folder outside tau-mcp's tree (written by `domain new`, found through
`--domain-path` / `domain_paths` / $TAU_DOMAIN_PATH) on the surfaces that run in-process:
`tau-harness serve` played by outside MCP clients, Gymnasium, Inspect, verifiers, the Eval
Protocol rows export, the run API in a fresh process; graded as a built-in domain is.

(`tests/test_pack_installed.py` covers an installed pack on the command line and tau-server;
`tests/test_ray.py` a pack folder in Ray actors.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StreamableHttpTransport
from mcp import Client as SdkClient
from mcp.client.streamable_http import streamable_http_client
from typer.testing import CliRunner

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.scaffold.pack import write_pack
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import make_hub
from tau_mcp.servers.domains import registry
from tau_mcp.servers.domains.discovery import PATH_ENV
from tests.support.data import DEMO_DIR
from tests.support.gym import gold_policy
from tests.support.harness import mcp_backend
from tests.support.mcp_agent_program import play

NAME = f"surfpack{os.getpid()}"
TASKS = ["downgrade", "plan_price", "upgrade_with_code"]


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("packs") / NAME
    write_pack(NAME, folder)
    return folder


@pytest.fixture
def found(pack, monkeypatch) -> Path:
    """The pack's folder on $TAU_DOMAIN_PATH for this test only (as `--domain-path` puts it)."""
    monkeypatch.delenv(PATH_ENV, raising=False)  # restored after the test, whatever set it
    registry.add_domain_paths([pack])
    return pack


@pytest.fixture
def unset(pack, monkeypatch) -> Path:
    """The pack's folder, not on $TAU_DOMAIN_PATH: a surface must be given it."""
    monkeypatch.delenv(PATH_ENV, raising=False)
    return pack


@asynccontextmanager
async def agent_client(kind: str, url: str):
    """(call) over fastmcp's client or the official MCP SDK's."""
    if kind == "fastmcp":
        async with FastMCPClient(StreamableHttpTransport(url)) as client:

            async def call(name, arguments):
                result = await client.call_tool(name, arguments, raise_on_error=False)
                return "".join(getattr(b, "text", "") for b in result.content), result.is_error

            yield call
        return
    async with httpx2.AsyncClient(timeout=60) as http:
        async with SdkClient(streamable_http_client(url, http_client=http)) as client:

            async def call(name, arguments):
                result = await client.call_tool(name, arguments)
                return "".join(getattr(b, "text", "") for b in result.content), result.is_error

            yield call


@pytest.mark.parametrize("kind", ["fastmcp", "mcp-sdk"])
async def test_tau_harness_serve_outside_clients_play_the_pack(found, kind):
    domain = registry.load_domains([NAME], DEMO_DIR)[NAME]
    config = RunConfig(domain=NAME, agent="mcp", user="scripted", judge_llm="none")
    async with mcp_backend(domain) as backend:
        hub = make_hub(backend, domain, config, None)
        try:
            async with hosted(hub, None) as base:
                async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
                    rewards = {}
                    for task_id in TASKS:
                        created = await http.post("/simulations", json={"task_id": task_id})
                        assert created.status_code == 201, created.text
                        simulation = created.json()
                        async with agent_client(kind, base + simulation["mcp"]) as call:
                            log = await play(call, domain.task(task_id))
                        assert "ended the conversation" in log[-1][1]
                        done = await http.get(f"/simulations/{simulation['simulation_id']}")
                        rewards[task_id] = done.json()["reward_info"]["reward"]
        finally:
            await hub.close()
    assert rewards == dict.fromkeys(TASKS, 1.0)


def test_gymnasium_steps_the_pack(unset):
    gym = pytest.importorskip("gymnasium", reason="gymnasium not installed (the gym extra)")
    import tau_mcp.harness.integrations.gym  # noqa: F401 - registers the ids on Gymnasium 1.x

    env = gym.make(
        "tau-mcp/Agent-v0",
        domain=NAME,
        user="scripted",
        data_dir=str(DEMO_DIR),
        domain_paths=[str(unset)],
    )
    try:
        rewards = {}
        for task_id in TASKS:
            observation, info = env.reset(seed=3, options={"task_id": task_id})
            assert "find_customer" in [t["function"]["name"] for t in info["tools"]]
            policy = gold_policy(env.unwrapped.driver.domain.task(task_id))
            next(policy)
            for _ in range(40):
                observation, reward, terminated, truncated, _ = env.step(policy.send(observation))
                if terminated or truncated:
                    break
            rewards[task_id] = reward
    finally:
        env.close()
    assert rewards == dict.fromkeys(TASKS, 1.0)


def test_inspect_runs_the_pack_with_its_model_as_the_agent(unset, tmp_path):
    pytest.importorskip("inspect_ai", reason="inspect-ai not installed (the inspect extra)")
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    from tau_mcp.harness.integrations.inspect_tasks import tau2

    model = "mockllm/model"
    agent = get_model(
        model,
        custom_outputs=[
            ModelOutput.for_tool_call(model, "find_customer", {"email": "ken@example.com"}),
            ModelOutput.for_tool_call(
                model, "change_plan", {"customer_id": "C1002", "plan_id": "basic"}
            ),
            ModelOutput.from_content(model, "You are on the Basic plan now. ###STOP###"),
        ],
    )
    task = tau2(
        domain=NAME,
        task_ids="downgrade",
        user="scripted",
        data_dir=str(DEMO_DIR),
        domain_paths=str(unset),
    )
    logs = inspect_eval(task, model=agent, log_dir=str(tmp_path), display="none")
    assert logs[0].status == "success", logs[0].error
    (sample,) = logs[0].samples
    assert sample.scores["tau_mcp_grade"].value == 1.0


@pytest.mark.e2e
def test_verifiers_loads_the_pack(unset):
    """In the verifiers virtualenv CI builds ($TAU_VF_PYTHON), or this one if it has verifiers."""
    python = os.environ.get("TAU_VF_PYTHON")
    if not python:
        pytest.importorskip("verifiers", reason="verifiers not available (set TAU_VF_PYTHON)")
        python = sys.executable
    code = (
        "import json, sys\n"
        "from tau_mcp.harness.integrations.verifiers_env import load_environment\n"
        "env = load_environment(domain=sys.argv[1], data_dir=sys.argv[2], domain_paths=[sys.argv[3]])\n"
        "print(json.dumps(sorted(row['info']['task_id'] for row in env.dataset)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != PATH_ENV}
    done = subprocess.run(
        [python, "-c", code, NAME, str(DEMO_DIR), str(unset)],
        capture_output=True,
        text=True,
        env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == TASKS


def test_eval_protocol_rows_of_the_pack(unset, tmp_path):
    from tau_mcp.harness.cli import app

    out = tmp_path / "rows.jsonl"
    result = CliRunner().invoke(
        app,
        ["export", "ep-rows", "--domain", NAME, "--domain-path", str(unset), "-o", str(out),
         "--data-dir", str(DEMO_DIR)],
        env={PATH_ENV: None},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["environment_context"]["task_id"] for r in rows) == TASKS
    assert all(r["environment_context"]["domain"] == NAME for r in rows)
    assert "verify_customer" in rows[0]["messages"][0]["content"]  # the pack's policy


@pytest.mark.e2e
def test_the_run_api_takes_domain_paths_in_a_fresh_process(unset, tmp_path):
    code = (
        "import json, sys, tau_mcp\n"
        "results = tau_mcp.run(tau_mcp.RunConfig(domain=sys.argv[1], domain_paths=sys.argv[2],"
        " agent='oracle', user='scripted', judge_llm='none', save_to=sys.argv[3]))\n"
    )
    out = tmp_path / "api.json"
    env = {k: v for k, v in os.environ.items() if k != PATH_ENV}
    done = subprocess.run(
        [sys.executable, "-c", code, NAME, str(unset), str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    sims = json.loads(out.read_text())["simulations"]
    assert sorted((s["task_id"], s["reward_info"]["reward"]) for s in sims) == [
        (t, 1.0) for t in TASKS
    ]


@pytest.mark.needs_data  # the board's schema is the reference data's
def test_the_board_refuses_a_packs_domain_in_one_sentence(unset, tmp_path):
    from tau_mcp.harness.cli import app
    from tests.support.data import DATA_DIR

    def invoke(*args):
        return CliRunner().invoke(app, [str(a) for a in args], env={PATH_ENV: None})

    results = tmp_path / "pack.json"
    ran = invoke(
        "run", "--domain", NAME, "--agent", "oracle", "--user", "scripted",
        "--domain-path", unset, "--save-to", results,
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    board = "retail, airline, telecom, banking_knowledge"
    submitted = invoke("submit", "prepare", results, "-o", tmp_path / "sub", "--data-dir", DATA_DIR)
    assert submitted.exit_code == 1
    assert submitted.output.strip() == (
        f"error: [board-domain] {results} is a run of '{NAME}', which the board does not rank "
        "(its domains: "
        f"{board})"
    )
    ranked = invoke("leaderboard", "-d", NAME, "--data-dir", DATA_DIR)
    assert ranked.exit_code == 1
    assert ranked.output.strip() == f"error: unknown domain '{NAME}': the board has {board}"


@pytest.mark.e2e
def test_worker_processes_take_a_domain_path_pack(unset, tmp_path):
    out = tmp_path / "workers.json"
    env = {k: v for k, v in os.environ.items() if k != PATH_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "tau_mcp.harness", "run", "--domain", NAME, "--domain-path",
         str(unset), "--agent", "oracle", "--user", "scripted", "--judge-llm", "none",
         "--workers", "2", "--num-trials", "2", "--save-to", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    sims = json.loads(out.read_text())["simulations"]
    assert len(sims) == 6 and all(s["reward_info"]["reward"] == 1.0 for s in sims)
