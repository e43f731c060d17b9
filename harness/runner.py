"""A batch of simulations: task selection, seeds, concurrency, the results file, resuming.

Each simulation of the batch runs on an executor: `SimulationRunner` itself runs it in this
process; `ProcessPool` (`--workers`), `RayPool` (`--ray`) and `CommandExecutor` (`--agent cmd`)
run it elsewhere and hand back the same record. The batch never knows which.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

from tau_mcp.harness.config import RunConfig, trial_seeds
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.results import (
    ResultsFile,
    SimulationRecord,
    check_tasks,
    load_results,
    records,
    results_lock,
)
from tau_mcp.harness.results.resume import check_no_orphan_journal, check_resumable
from tau_mcp.harness.simulate import SimulationRunner, TaskSelection
from tau_mcp.harness.task_group import gather_or_cancel
from tau_mcp.servers.engine.tasks import Task

__all__ = ["Runner", "SimulationExecutor", "keep_finished"]


class SimulationExecutor(Protocol):
    """Where a batch's simulations run. `running()` is entered once around the batch (workers
    started, a server hosted...); `simulate` returns the simulation's record: graded, or an
    infrastructure-error record after the same retries a local run makes (an executor
    elsewhere sends the record's `layout()` and rebuilds it with `SimulationRecord.trusted`)."""

    def running(self) -> AbstractAsyncContextManager[Any]: ...

    async def simulate(self, task: Task, trial: int, seed: int) -> SimulationRecord: ...


class Runner:
    """Runs every missing simulation of a run and keeps its results file."""

    def __init__(
        self, simulations: SimulationRunner, executor: SimulationExecutor | None = None
    ) -> None:
        """`simulations` says what one simulation is (and writes the results header);
        `executor` runs them (default: `simulations` itself, in this process)."""
        self.simulations = simulations
        self.executor: SimulationExecutor = executor if executor is not None else simulations
        #: Known once the run starts (before `on_start`): the tasks it runs and leaves out, and
        #: how many finished simulations a resumed run kept from its results file.
        self.selection: TaskSelection | None = None
        self.kept = 0

    @property
    def config(self) -> RunConfig:
        return self.simulations.config

    async def run(
        self,
        on_done: Callable[[SimulationRecord], None] | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> ResultsFile:
        """Run every missing simulation, holding the results file's lock throughout;
        `on_done` sees each record as it is saved."""
        with results_lock(self.config.save_to):
            check_no_orphan_journal(self.config.save_to)
            return await self._run_locked(on_done, on_start)

    async def _run_locked(
        self,
        on_done: Callable[[SimulationRecord], None] | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> ResultsFile:
        config, simulations = self.config, self.simulations
        self.selection = simulations.select()
        tasks = self.selection.tasks
        simulations.user_guidelines()
        info = simulations.info()
        filtered = self.selection.header(config.agent)
        if filtered is not None:
            info.filtered_tasks = filtered
        results = ResultsFile(
            config.save_to, info, [t.model_dump(mode="json", exclude_none=True) for t in tasks]
        )
        done: set[tuple[str, int]] = set()
        fresh = config.save_to is None or not Path(config.save_to).exists()
        if not fresh:
            domain = simulations.domain
            done = keep_finished(results, Path(config.save_to), domain.name, domain.tasks)
            self.kept = len(done)
        seeds = trial_seeds(config.seed, config.num_trials)
        todo = [
            (task, trial)
            for trial in range(config.num_trials)
            for task in tasks
            if (task.id, trial) not in done
        ]
        results.save()
        if on_start is not None:
            on_start(len(todo))
        limit = asyncio.Semaphore(max(1, config.max_concurrency))

        async def one(task: Task, trial: int) -> None:
            async with limit:
                sim = await self.executor.simulate(task, trial, seeds[trial])
            results.add(sim)
            if on_done is not None:
                on_done(sim)

        try:
            async with self.executor.running():
                await gather_or_cancel(*(one(task, trial) for task, trial in todo))
        except ConfigError:
            # The run could not start for real (say, a model's key is missing, found as the
            # first request went out): a file this run created holds nothing worth keeping.
            if fresh and not results.simulations:
                results.discard()
            raise
        results.finish()
        return results


def keep_finished(
    results: ResultsFile, path: Path, domain: str, task_ids: Collection[str] | None = None
) -> set[tuple[str, int]]:
    """Resuming: add a previous run's finished simulations to `results` (infrastructure
    failures are left out, to be run again) and return their (task id, trial) keys. A file
    with two different results for one (task, trial), or a simulation of a task it does not
    list (or, given `task_ids`, that the domain does not have), is refused."""
    previous = load_results(path)
    old_domain = ((previous.get("info") or {}).get("environment_info") or {}).get("domain_name")
    if old_domain not in (None, domain):
        raise ConfigError(f"{path} holds a run on domain '{old_domain}', not '{domain}'")
    check_tasks(path, previous, task_ids)
    check_resumable(path, previous, results.header)
    done = set()
    for sim, record in zip(previous["simulations"], records(previous), strict=True):
        if record.infrastructure_error:
            continue
        # load_results leaves one result per (task, trial): different copies are refused
        done.add((str(record.task_id), int(record.trial or 0)))
        results.add(sim, save=False)  # as the file holds it, byte for byte
    return done
