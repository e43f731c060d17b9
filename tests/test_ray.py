"""Runs on a Ray cluster (a local one started for these tests, 2 CPUs): graded exactly as a
local run, a killed worker costs only a retry, a killed driver resumes, limits hold cluster-wide."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig, parse_provider_limits
from tau_mcp.harness.distributed.limits import LocalProviderLimits
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.metrics import INFRA
from tau_mcp.harness.results import journal_path, load_results
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tests.support.data import DATA_DIR, DEMO_DIR

ROOT = Path(__file__).resolve().parent.parent


# --- without a cluster ------------------------------------------------------------------------
def test_provider_limits_parse_and_hold_in_one_process():
    assert parse_provider_limits("openai=40, anthropic=20") == {"openai": 40, "anthropic": 20}
    assert parse_provider_limits(None) == {}
    for bad in ("openai", "openai=0", "=3", "openai=x"):
        with pytest.raises(ConfigError):
            parse_provider_limits(bad)

    limits = LocalProviderLimits({"openai": 3})

    async def request(model: str) -> None:
        async with limits.gate(model):
            await asyncio.sleep(0.02)

    async def many() -> None:
        await asyncio.gather(*(request("openai/fake") for _ in range(12)))
        await asyncio.gather(*(request("anthropic/claude-x") for _ in range(5)))

    asyncio.run(many())
    assert limits.peak == {"openai": 3}


def test_ray_flag_without_ray_is_one_sentence(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--domain",
            "mock",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--ray",
            "local",
            "--data-dir",
            str(DEMO_DIR),
            "--save-to",
            str(tmp_path / "r.json"),
        ],
    )
    assert result.exit_code != 0
    from tau_mcp.harness.install_hint import install_command

    # the install command for how tau-mcp is installed here (tests/test_install_hint.py)
    assert install_command("ray") in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not (tmp_path / "r.json").exists()


def test_bare_ray_flag_means_a_local_instance():
    from tau_mcp.harness.cli import bare_ray_flag

    assert bare_ray_flag(["run", "--ray"]) == ["run", "--ray", "local"]
    assert bare_ray_flag(["--ray", "--save-to", "x"]) == ["--ray", "local", "--save-to", "x"]
    assert bare_ray_flag(["--ray", "auto"]) == ["--ray", "auto"]


# --- on a local cluster -----------------------------------------------------------------------


def _ray_cli() -> list[str]:
    """Ray's command line for this Python: its script beside this Python, else its module
    run by this Python (never another environment's `ray` on PATH, whose workers could not
    import tau-mcp)."""
    exe = Path(sys.executable).with_name("ray")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-m", "ray.scripts.scripts"]


@pytest.fixture(scope="module")
def cluster():
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install -e '.[ray]'")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    start = subprocess.run(
        [
            *_ray_cli(),
            "start",
            "--head",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--disable-usage-stats",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    if start.returncode != 0:
        pytest.skip(f"could not start a local Ray cluster: {start.stderr.strip()[-300:]}")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="auto", log_to_driver=False)
    try:
        yield "auto"
    finally:
        ray.shutdown()
        subprocess.run([*_ray_cli(), "stop", "--force"], capture_output=True, timeout=120)


def _load(name: str):
    from tau_mcp.servers.domains.registry import load_domains

    domain = load_domains([name], DATA_DIR)[name]
    domain.warm()
    return domain


async def _run(domain, config: RunConfig, use_ray: bool, on_done=None, kill_after=None):
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.distributed.ray_pool import RayPool

    backend = await in_process_backend({domain.name: domain}, None)
    pool = None
    try:
        simulations = SimulationRunner(backend, domain, config)
        if use_ray:
            pool = RayPool(simulations, address="auto", server=None, token=None)
        return (await Runner(simulations, pool).run(on_done)).simulations, pool
    finally:
        if pool is not None:
            pool.close()
        await backend.close()


def _by_key(sims: list[dict]) -> dict[tuple[str, int], dict]:
    keyed: dict[tuple[str, int], dict] = {}
    for sim in sims:
        key = (str(sim["task_id"]), int(sim["trial"]))
        assert key not in keyed, f"{key} recorded twice"
        keyed[key] = sim
    return keyed


@pytest.mark.e2e
@pytest.mark.needs_data
@pytest.mark.parametrize("domain_name", ["retail", "telecom"])
def test_ray_run_grades_exactly_as_a_local_run(cluster, domain_name):
    domain = _load(domain_name)
    config = RunConfig(
        judge_llm="none",
        domain=domain_name,
        agent="oracle",
        user="scripted",
        num_trials=2,
        max_concurrency=8,
    )
    local, _ = asyncio.run(_run(domain, config, use_ray=False))
    remote, _ = asyncio.run(_run(domain, config, use_ray=True))
    local_by, remote_by = _by_key(local), _by_key(remote)
    assert len(local_by) == 2 * len(domain.task_ids("base"))
    assert local_by.keys() == remote_by.keys()
    for key, sim in local_by.items():
        other = remote_by[key]
        assert other["termination_reason"] == sim["termination_reason"], key
        assert other["reward_info"] == sim["reward_info"], key
        assert other["seed"] == sim["seed"]
        assert [m.get("content") for m in other["messages"]] == [
            m.get("content") for m in sim["messages"]
        ], key


@pytest.mark.e2e
@pytest.mark.needs_data
def test_a_killed_worker_costs_only_a_retry(cluster):
    domain = _load("retail")
    config = RunConfig(
        judge_llm="none",
        domain="retail",
        agent="oracle",
        user="scripted",
        num_trials=2,
        max_concurrency=6,
        retry_delay=0.1,
    )
    done = {"count": 0, "killed": None}
    holder: dict = {}

    def on_done(sim: dict) -> None:
        done["count"] += 1
        if done["count"] == 25 and done["killed"] is None:
            pid = holder["pids"][0]
            os.kill(pid, signal.SIGKILL)
            done["killed"] = pid

    async def go():
        from tau_mcp.harness.backends.http import in_process_backend
        from tau_mcp.harness.distributed.ray_pool import RayPool

        backend = await in_process_backend({domain.name: domain}, None)
        simulations = SimulationRunner(backend, domain, config)
        pool = RayPool(simulations, address="auto", server=None, token=None)
        runner = Runner(simulations, pool)
        try:
            holder["pids"] = await pool.worker_pids()
            sims = (await runner.run(on_done)).simulations
            after = await pool.worker_pids()
            return sims, after
        finally:
            pool.close()
            await backend.close()

    sims, pids_after = asyncio.run(go())
    assert done["killed"] is not None
    assert done["killed"] not in pids_after, "the killed worker was restarted as a new process"
    by = _by_key(sims)
    assert len(by) == 2 * len(domain.task_ids("base"))
    assert all(s["termination_reason"] != INFRA for s in sims)
    assert all(s["reward_info"]["reward"] == 1.0 for s in sims)


@pytest.mark.e2e
@pytest.mark.needs_data
def test_a_killed_ray_run_resumes_into_the_same_file(cluster, tmp_path):
    save = tmp_path / "ray_run.json"
    cmd = [
        sys.executable,
        "-m",
        "tau_mcp.harness",
        "run",
        "--domain",
        "retail",
        "--agent",
        "oracle",
        "--user",
        "scripted",
        "--num-trials",
        "2",
        "--max-concurrency",
        "2",
        "--ray",
        "auto",
        "--save-to",
        str(save),
        "--judge-llm",
        "none",
        "--data-dir",
        str(DATA_DIR),
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    first = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    journal = journal_path(save)
    deadline = time.monotonic() + 150
    while time.monotonic() < deadline and first.poll() is None:
        if journal.exists() and len(journal.read_text().splitlines()) >= 20:
            break
        time.sleep(0.2)
    assert first.poll() is None, "the first run ended before it could be killed"
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    partial = load_results(save)["simulations"]
    assert 20 <= len(partial) < 228
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert second.returncode == 0, second.stdout[-2000:] + second.stderr[-2000:]
    final = json.loads(save.read_text())["simulations"]
    by = _by_key(final)
    assert len(by) == 228
    kept = {s["id"] for s in partial}
    assert kept <= {s["id"] for s in final}, "finished simulations were re-run or lost"


@pytest.mark.e2e
def test_provider_limit_holds_over_all_workers(cluster):
    import ray

    from tau_mcp.harness.distributed.ray_pool import RayProviderGate, _limiter_class

    limiter = _limiter_class(ray).remote({"openai": 2})

    @ray.remote
    def worker(limiter) -> None:
        async def go():
            gate = RayProviderGate(limiter, {"openai": 2})

            async def one():
                async with gate.gate("openai/fake"):
                    await asyncio.sleep(0.1)

            await asyncio.gather(*(one() for _ in range(4)))

        asyncio.run(go())

    ray.get([worker.remote(limiter) for _ in range(3)])
    assert ray.get(limiter.peaks.remote()) == {"openai": 2}
    ray.kill(limiter)


@pytest.mark.e2e
@pytest.mark.needs_data
def test_gym_rollouts_run_in_ray_actors_as_documented(cluster):
    """docs/ray.md: one Ray actor per environment, each with its own episodes."""
    pytest.importorskip("gymnasium", reason="the gym extra is not installed")
    import ray

    from tau_mcp.conversation.plan import describe, gold_actions
    from tests.support.gym import CLOSING

    task = _load("mock").task("create_task_1")
    plan = [describe(a) for a in gold_actions(task)] + [CLOSING]  # agent-side actions only

    @ray.remote
    class RolloutWorker:
        def __init__(self, data_dir: str) -> None:
            import gymnasium as gym

            self.env = gym.make(
                "tau-mcp/Agent-v0",
                domain="mock",
                task_id="create_task_1",
                user="scripted",
                data_dir=data_dir,
            )

        def rollout(self, seed: int, actions: list[str]) -> float:
            self.env.reset(seed=seed)
            reward = 0.0
            for action in actions:
                _, reward, terminated, truncated, _ = self.env.step(action)
                if terminated or truncated:
                    break
            return reward

    workers = [RolloutWorker.remote(str(DATA_DIR)) for _ in range(2)]
    runs = [(0, plan), (1, [CLOSING]), (2, plan), (3, [CLOSING])]  # skipping the work scores 0
    rewards = ray.get([workers[i % 2].rollout.remote(seed, a) for i, (seed, a) in enumerate(runs)])
    assert rewards == [1.0, 0.0, 1.0, 0.0]
    for worker in workers:
        ray.kill(worker)


@pytest.mark.e2e
def test_a_pack_folder_reaches_ray_actors(cluster, tmp_path, monkeypatch):
    """Actors of a cluster started on its own do not share the driver's environment: a
    `--domain-path` pack reaches them in their payload, and they import it themselves."""
    from tau_mcp.harness.scaffold.pack import write_pack
    from tau_mcp.harness.wiring import load_domain
    from tau_mcp.servers.domains.discovery import PATH_ENV

    monkeypatch.delenv(PATH_ENV, raising=False)  # restored after the test
    name = f"raypack{os.getpid()}"
    write_pack(name, tmp_path / name)
    config = RunConfig(
        judge_llm="none",
        domain=name,
        agent="oracle",
        user="scripted",
        domain_paths=[tmp_path / name],
    )
    domain = load_domain(name, DEMO_DIR, ready="warm", domain_paths=config.domain_paths)
    remote, _ = asyncio.run(_run(domain, config, use_ray=True))
    assert sorted((s["task_id"], s["reward_info"]["reward"]) for s in remote) == [
        ("downgrade", 1.0),
        ("plan_price", 1.0),
        ("upgrade_with_code", 1.0),
    ]
