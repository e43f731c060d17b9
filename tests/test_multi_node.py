"""Past one machine: two tau-server nodes (on 127.0.0.2 and 127.0.0.3, one with two workers)
behind HAProxy configured by `tau-server lb-config`. Every request of an episode reaches its
node; `tau-harness run --server` (in one process and on Ray), Gymnasium and Eval Protocol
rollouts work through it unchanged; a node that goes down answers its episodes with one
sentence, the other node's go on. Skips, saying why, where HAProxy is not installed or the
addresses cannot be bound (and the Ray run where Ray is not installed)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tau_mcp.servers.lb_config import haproxy_config
from tests.support.data import DATA_DIR
from tests.support.server import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.needs_data("mock")]

HAPROXY = shutil.which("haproxy") or next(
    (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.path.exists(p)), None
)
NODES = ("127.0.0.2", "127.0.0.3")
EP_SCRIPT = Path(__file__).parent / "node" / "ep_rollout.py"


def _bindable(host: str) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, 0))
        except OSError:
            return False
    return True


def _wait(url: str, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(
                f"{what} exited: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
            )
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start within 60 s")
        time.sleep(0.2)


class Cluster:
    def __init__(self, base: str, nodes: list[str], procs: dict[str, subprocess.Popen]) -> None:
        self.base, self.nodes, self.procs = base, nodes, procs


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    if HAPROXY is None:
        pytest.skip("HAProxy is not installed (Debian: apt-get install haproxy)")
    if not all(_bindable(host) for host in NODES):
        pytest.skip(f"cannot bind the loopback addresses {', '.join(NODES)}")
    port = free_port()
    procs: dict[str, subprocess.Popen] = {}
    nodes = []
    try:
        for host, workers in zip(NODES, ("1", "2"), strict=True):
            node = f"{host}:{port}"
            command = [sys.executable, "-c", "from tau_mcp.servers.cli import app; app()"]
            command += ["serve", "--host", host, "--port", str(port), "--domains", "mock"]
            command += ["--data-dir", str(DATA_DIR), "--workers", workers]
            procs[node] = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
            nodes.append(node)
        for node in nodes:
            _wait(f"http://{node}/health", procs[node], f"tau-server on {node}")
        front = free_port()
        config = tmp_path_factory.mktemp("haproxy") / "haproxy.cfg"
        config.write_text(haproxy_config(nodes, f"127.0.0.1:{front}", max_connections=512))
        procs["haproxy"] = subprocess.Popen(
            [HAPROXY, "-f", str(config), "-db"], stderr=subprocess.PIPE, text=True
        )
        base = f"http://127.0.0.1:{front}"
        _wait(base + "/health", procs["haproxy"], "HAProxy")
        yield Cluster(base, nodes, procs)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in procs.values():
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def test_lb_config_is_checked() -> None:
    with pytest.raises(ValueError, match="HOST:PORT"):
        haproxy_config(["nohost"])
    with pytest.raises(ValueError, match="at least one"):
        haproxy_config([])
    text = haproxy_config(["10.0.0.1:8000", "10.0.0.2:8000"], "0.0.0.0:80")
    assert "server node1 10.0.0.2:8000 check" in text and "bind 0.0.0.0:80" in text


def test_each_episode_stays_on_its_node(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.base, timeout=10) as client:
        episodes = [f"mn-{i}" for i in range(12)]
        for episode in episodes:
            assert client.post("/mock/episodes", json={"episode_id": episode}).status_code == 201
        for _ in range(4):  # ids a node chose itself are learned from the answer's Location
            episodes.append(client.post("/mock/episodes").json()["episode_id"])
        for episode in episodes:
            for _ in range(3):  # round robin would send every other request elsewhere
                assert client.get(f"/mock/episodes/{episode}/state").status_code == 200
        # each node holds its own share; the node with two workers counts them in /health
        on_second = httpx.get(f"http://{cluster.nodes[1]}/health", timeout=10).json()["episodes"]
        assert 0 < on_second < len(episodes)
        held = 0
        for episode in episodes:
            direct = httpx.get(f"http://{cluster.nodes[1]}/mock/episodes/{episode}/state")
            held += direct.status_code == 200
        assert held == on_second


def test_harness_run_through_the_balancer(cluster: Cluster, tmp_path) -> None:
    from tau_mcp.harness.cli import app

    out = tmp_path / "run.json"
    result = CliRunner().invoke(
        app,
        [
            "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted",
            "--judge-llm", "none", "--data-dir", str(DATA_DIR), "--num-trials", "2",
            "--server", cluster.base, "--save-to", str(out),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    simulations = json.loads(out.read_text())["simulations"]
    assert simulations and all(s["reward_info"]["db_check"]["db_match"] for s in simulations)


def test_ray_run_through_the_balancer(cluster: Cluster, tmp_path) -> None:
    """The clients on Ray (`--ray`, a local instance the run starts and stops), the episode
    servers behind the balancer: the split a real cluster uses (docs/scaling.md)."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    out = tmp_path / "ray.json"
    command = [sys.executable, "-m", "tau_mcp.harness", "run", "--domain", "mock"]
    command += ["--agent", "oracle", "--user", "scripted", "--judge-llm", "none"]
    command += ["--data-dir", str(DATA_DIR), "--max-concurrency", "2", "--ray"]
    command += ["--server", cluster.base, "--save-to", str(out)]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    run = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    simulations = json.loads(out.read_text())["simulations"]
    assert simulations and all(s["reward_info"]["db_check"]["db_match"] for s in simulations)


def test_gymnasium_through_the_balancer(cluster: Cluster) -> None:
    gym = pytest.importorskip("gymnasium")
    from tests.test_integrations_gym import play

    env = gym.make(
        "tau-mcp/Agent-v0", domain="mock", user="scripted", data_dir=str(DATA_DIR),
        server=cluster.base,
    )  # fmt: skip
    try:
        task_ids = env.unwrapped.driver.domain.task_ids(None)[:3]
        for task_id in task_ids:
            _, reward, terminated, truncated, info = play(env, task_id)
            assert (terminated, truncated) == (True, False)
            assert reward == 1.0, info["reward_info"]
    finally:
        env.close()


def test_eval_protocol_rollout_through_the_balancer(cluster: Cluster) -> None:
    python = os.environ.get("TAU_EP_PYTHON")
    if not python:
        pytest.skip("eval-protocol not available: set TAU_EP_PYTHON (its own virtualenv)")
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG", "TMPDIR") if k in os.environ}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    run = subprocess.run(
        [python, str(EP_SCRIPT), cluster.base + "/mock/mcp"],
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
    assert [r[0] for r in report["responses"]] == ["get_users", "create_task", "create_task"]
    assert [r[2] for r in report["responses"]] == [0.0, 1.0, 0.0]
    session = report["session_id"]
    assert httpx.get(f"{cluster.base}/mock/episodes/{session}/state").status_code == 200


def test_a_node_down_fails_only_its_episodes(cluster: Cluster) -> None:
    """Last: it stops a node."""
    with httpx.Client(base_url=cluster.base, timeout=10) as client:
        episodes = [f"down-{i}" for i in range(10)]
        for episode in episodes:
            assert client.post("/mock/episodes", json={"episode_id": episode}).status_code == 201
        first = cluster.nodes[0]
        on_first = [
            e for e in episodes if httpx.get(f"http://{first}/mock/episodes/{e}/state").status_code == 200
        ]  # fmt: skip
        assert 0 < len(on_first) < len(episodes)
        proc = cluster.procs[first]
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        time.sleep(0.5)
        for episode in episodes:
            state = client.get(f"/mock/episodes/{episode}/state")
            if episode in on_first:
                assert state.status_code == 503
                assert "node holding this episode is down" in state.json()["error"]
            else:
                assert state.status_code == 200
