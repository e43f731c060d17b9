"""The set-up every entry point shares (`tau_mcp.harness.wiring`) and the runner's composed pieces."""

from __future__ import annotations

import pytest

from tau_mcp.grading import Judge
from tau_mcp.harness.backends.exchange import AsgiExchange
from tau_mcp.harness.config import RunConfig, build_judge
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import load_domain, open_backend, shared_domain
from tau_mcp.servers.engine.errors import EngineError
from tests.support.data import DEMO_DIR


@pytest.mark.parametrize("off", ["none", "OFF", " no ", ""])
def test_judging_is_switched_off_by_name(off: str) -> None:
    assert build_judge(off, {"temperature": 1}) is None


def test_a_judge_keeps_its_model_and_arguments() -> None:
    assert build_judge(None) == Judge(None, {})
    assert build_judge("openai/j", {"temperature": 0.5}) == Judge("openai/j", {"temperature": 0.5})


def test_domains_load_once_per_process_when_shared(tmp_path) -> None:
    assert shared_domain("mock", DEMO_DIR) is shared_domain("mock", DEMO_DIR)
    assert load_domain("mock", DEMO_DIR) is not load_domain("mock", DEMO_DIR)
    with pytest.raises(EngineError, match="unknown domain"):
        load_domain("nowhere", DEMO_DIR)
    with pytest.raises(EngineError):
        load_domain("mock", tmp_path / "missing")


async def test_no_url_means_the_server_in_this_process() -> None:
    backend = await open_backend(load_domain("mock", DEMO_DIR))
    try:
        ref = await backend.create_episode("mock", "demo_create")
        assert ref.agent_mcp.endswith("/agent/mcp")
        assert isinstance(backend.exchange, AsgiExchange)  # no socket: the app in this process
    finally:
        await backend.close()


class CountingExecutor:
    """An executor of our own: records what the batch hands it, runs it locally."""

    def __init__(self, simulations: SimulationRunner) -> None:
        self.simulations, self.seen = simulations, []

    def running(self):
        return self.simulations.running()

    async def simulate(self, task, trial, seed):
        self.seen.append((task.id, trial, seed))
        return await self.simulations.simulate(task, trial, seed)


async def test_a_batch_runs_each_simulation_on_the_executor_it_is_given() -> None:
    domain = load_domain("mock", DEMO_DIR)
    backend = await open_backend(domain)
    try:
        config = RunConfig(
            judge_llm="none", domain="mock", agent="oracle", user="scripted", num_trials=2
        )
        simulations = SimulationRunner(backend, domain, config)
        executor = CountingExecutor(simulations)
        results = await Runner(simulations, executor).run()
    finally:
        await backend.close()
    tasks = domain.task_ids("base")
    assert sorted((t, n) for t, n, _ in executor.seen) == sorted(
        (t, n) for t in tasks for n in range(2)
    )
    assert len(results.simulations) == 2 * len(tasks)
    assert all(s["reward_info"]["reward"] == 1.0 for s in results.simulations)
