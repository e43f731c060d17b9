"""Clients nobody on the team wrote, against a real `tau-server serve` on loopback:
the official MCP TypeScript SDK (node) and Eval Protocol's own rollout client.

The TypeScript SDK is installed with npm into $TAU_NODE_SDK_DIR (default
~/.cache/tau-mcp/node-sdk). Eval Protocol pins mcp<2, which cannot share our environment, so its
client runs under the interpreter named by $TAU_EP_PYTHON (a separate virtualenv with
`pip install eval-protocol`), or ours if it happens to import `eval_protocol`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.data import DEMO_DIR
from tests.support.server import real_server

pytestmark = pytest.mark.e2e
NODE_DIR = Path(os.environ.get("TAU_NODE_SDK_DIR", Path.home() / ".cache" / "tau-mcp" / "node-sdk"))
NODE_SCRIPT = Path(__file__).parent / "node" / "mcp_client.mjs"
EP_SCRIPT = Path(__file__).parent / "node" / "ep_rollout.py"


def _node_sdk() -> Path:
    if not shutil.which("node") or not shutil.which("npm"):
        pytest.skip("node/npm not installed")
    modules = NODE_DIR / "node_modules"
    if not (modules / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        if not (NODE_DIR / "package.json").is_file():
            (NODE_DIR / "package.json").write_text('{"name": "tau-node-client", "private": true}\n')
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "@modelcontextprotocol/sdk@^1"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            pytest.skip(
                f"could not install @modelcontextprotocol/sdk: {done.stderr.strip()[-300:]}"
            )
    return modules


@pytest.mark.parametrize("workers", ["1", "2"])  # one process; the front and two workers
def test_typescript_sdk_client(workers: str) -> None:
    modules = _node_sdk()
    with real_server("mock", "--token", "tok", "--workers", workers, data_dir=DEMO_DIR) as base:
        created = httpx.post(
            base + "/mock/episodes",
            json={"episode_id": "ts"},
            headers={"Authorization": "Bearer tok"},
        ).json()
        calls = [
            ["get_users", {}],
            ["create_task", {"user_id": "nobody", "title": "x"}],
            ["create_task", {"user_id": "ana", "title": "ts"}],
        ]
        run = subprocess.run(
            ["node", str(NODE_SCRIPT), base + created["agent_mcp"], json.dumps(calls), "tok"],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NODE_PATH": str(modules)},
        )
        assert run.returncode == 0, run.stderr[-2000:]
        report = json.loads(run.stdout.strip().splitlines()[-1])
        state = httpx.get(
            base + "/mock/episodes/ts/state", headers={"Authorization": "Bearer tok"}
        ).json()
    assert {t["name"]: t["readOnly"] for t in report["tools"]} == {
        "create_task": False,
        "get_users": True,
        "update_task_status": False,
        "transfer_to_human_agents": False,
    }
    assert report["sessionId"]  # the SDK speaks the initialize handshake with Mcp-Session-Id
    assert report["resources"] == ["tau2://mock/policy"]
    assert report["results"][1] == {"text": "Error: User nobody not found", "isError": True}
    assert json.loads(report["results"][2]["text"])["title"] == "ts"
    assert any(t["title"] == "ts" for t in state["agent_db"]["tasks"].values())


def _ep_python() -> str:
    explicit = os.environ.get("TAU_EP_PYTHON")
    if explicit:
        return explicit
    try:
        import eval_protocol  # noqa: F401
    except ImportError:
        pytest.skip(
            "eval-protocol not available: set TAU_EP_PYTHON to a Python with `pip install eval-protocol` "
            "(it pins mcp<2, so it needs its own virtualenv)"
        )
    return sys.executable


@pytest.mark.needs_data  # the rollout plays a task of the reference's mock domain
@pytest.mark.parametrize("workers", ["1", "2"])  # one process; the front and two workers
def test_eval_protocol_rollout(workers: str) -> None:
    python = _ep_python()
    with real_server("mock", "--workers", workers) as base:
        # A minimal environment: the EP interpreter must not see this test process's settings.
        env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
        env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch at import
        run = subprocess.run(
            [python, str(EP_SCRIPT), base + "/mock/mcp"],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=EP_SCRIPT.parent,
        )
        assert run.returncode == 0, run.stderr[-3000:]
        report = json.loads(
            next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))[7:]
        )
        session = report["session_id"]
        state = httpx.get(f"{base}/mock/episodes/{session}/state").json()
        status = httpx.get(
            base + "/mock/control/status", headers={"mcp-session-id": session}
        ).json()
    names = [r[0] for r in report["responses"]]
    assert names == ["get_users", "create_task", "create_task"]
    observations = [json.loads(r[1]) for r in report["responses"]]
    assert all(isinstance(o, dict) for o in observations)  # a JSON object every time
    assert observations[0]["result"][0]["user_id"] == "user_1"  # a list, wrapped
    assert observations[2] == {"error": "User zz not found"}
    assert [r[2] for r in report["responses"]] == [
        0.0,
        1.0,
        0.0,
    ]  # DB reward reached on the gold call
    # reset_session ended the episode; its final state stays readable
    assert status["ended"] is True
    assert [t["title"] for t in state["agent_db"]["tasks"].values()].count("Important Meeting") == 1
