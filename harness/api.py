"""Running a `RunConfig`: the Python face of `tau-harness run` (`tau_mcp.run(config)`).

    import tau_mcp
    from tau_mcp.harness.config import RunConfig

    results = tau_mcp.run(RunConfig(domain="mock", agent="oracle", user="scripted"))
    print([s["reward_info"]["reward"] for s in results.simulations])

`run` does what the command does, in the same order: it loads the domain (and its task set),
opens the backend (the server app in this process, or the `tau-server` at `config.server`),
checks every model the run will call can be reached with the keys that are set, picks the
executor (this process; `workers` local processes, forked before the event loop starts; Ray
actors; or an agent program per simulation, agent "cmd"), holds the provider limits, and runs
the batch (`tau_mcp.harness.runner.Runner`): the results file at `config.save_to` is written
as simulations finish, and an existing one is resumed. It returns the run's `ResultsFile`:
`header` (the results file's header) and `simulations` (its records, in the reference's
layout). The command line is a thin skin on it (`tau_mcp.harness.cli.run`): options in, a
progress bar and a summary out.

A configuration the run cannot carry out raises `ConfigError` (one sentence) before anything is
written; a stopped tau-server raises `ServerGone`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from tau_mcp.conversation.llm import set_request_gate
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.preflight import check_models, first_request_check, models_called
from tau_mcp.harness.results import ResultsFile
from tau_mcp.harness.runner import Runner, SimulationExecutor
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import load_domain, open_backend
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError

__all__ = ["RunWatcher", "run", "simulations_for", "start_notes"]

TURN_ROLES = {"agent", "user"}  # models called in every turn (the judge only at grading)


class RunWatcher(Protocol):
    """What a caller sees of a run as it goes (the command line's progress bar). `watching` is
    entered once the batch is about to start (after any worker processes are forked) and left
    when it ends, an error included; `started` gets what the run says before its first
    simulation and how many it will run; `finished` each record as it is saved."""

    def watching(self) -> AbstractContextManager[Any]: ...

    def started(self, notes: list[str], todo: int) -> None: ...

    def finished(self, record: dict[str, Any]) -> None: ...


def run(config: RunConfig, watcher: RunWatcher | None = None) -> ResultsFile:
    """Run every simulation `config` asks for (the missing ones, when its results file exists)
    and return the results: `.header` and `.simulations`. Blocks; call it where no event loop
    runs (a notebook's loop: run it in a thread)."""
    try:
        domain = load_domain(
            config.domain,
            config.data_dir,
            task_set=config.task_set_name,
            domain_paths=config.domain_paths,
        )
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    if config.ray is None and config.workers is not None and config.workers != 1:
        return _run_with_workers(config, domain, watcher)
    return asyncio.run(_run(config, domain, watcher))


def simulations_for(backend: EpisodeBackend, domain: Domain, config: RunConfig) -> SimulationRunner:
    """The run's one-simulation piece; with agent "cmd" the agent's seat is the hosted MCP
    endpoint a program plays (`tau_mcp.harness.serve`, loaded only then)."""
    if config.agent == "cmd":
        from tau_mcp.harness.seat import OutsideAgent

        # `timeout` bounds the program (tau_mcp.harness.serve.command), which then ends the
        # conversation from the agent's side and has it graded (docs/serve.md)
        return SimulationRunner(
            backend, domain, config.replace(timeout=None), agent_factory=OutsideAgent
        )
    return SimulationRunner(backend, domain, config)


async def _run(config: RunConfig, domain: Domain, watcher: RunWatcher | None) -> ResultsFile:
    backend = await open_backend(domain, config.server, config.server_token)
    pool = None
    try:
        simulations = simulations_for(backend, domain, config)
        # bad task ids (or none the agent can run) fail here, before any output
        tasks = simulations.select().tasks
        # so does a missing API key (for the models as resolved: defaults filled in). When the
        # agent or user calls a model, every simulation starts with a model request: the check
        # waits for the first one, so start-up does not import litellm. Otherwise (only the
        # judge, late in a simulation; or Ray workers calling the models) it runs now.
        uses = models_called(
            simulations.config, tasks, simulations.grader.judge, simulations.reviewer
        )
        check_now = config.ray is not None or not any(u.role in TURN_ROLES for u in uses)
        if check_now:
            check_models(uses)
        executor: SimulationExecutor | None = None
        if config.agent == "cmd":
            from tau_mcp.harness.serve.command import CommandExecutor

            executor = CommandExecutor(simulations, config.agent_cmd or "", config.timeout)
        if config.ray is not None:
            from tau_mcp.harness.distributed.ray_pool import RayPool

            executor = pool = RayPool(
                simulations,
                address=config.ray,
                server=config.server,
                token=config.server_token,
                provider_limits=config.provider_limits,
                workers=config.workers or None,  # Ray's default (0, auto): one per cluster CPU
            )
        else:
            limits = None
            if config.provider_limits:
                from tau_mcp.harness.distributed.limits import LocalProviderLimits

                limits = LocalProviderLimits(config.provider_limits).gate
            set_request_gate(first_request_check([] if check_now else uses, limits))
        return await _drive(Runner(simulations, executor), config, watcher)
    finally:
        if pool is not None:
            pool.close()
        set_request_gate(None)
        await backend.close()


def _run_with_workers(config: RunConfig, domain: Domain, watcher: RunWatcher | None) -> ResultsFile:
    """`workers`: everything is checked here, the workers are forked before the event loop
    starts (they inherit the loaded domain and imported modules), then the loop drives the run."""
    from tau_mcp.harness.distributed.process_pool import NoBackend, ProcessPool, cpu_count, preload

    simulations = simulations_for(NoBackend(), domain, config)  # type: ignore[arg-type]
    tasks = simulations.select().tasks
    count = min(
        config.workers or cpu_count(), config.max_concurrency, len(tasks) * config.num_trials
    )
    if count <= 1:  # nothing to share out: the usual single-process run
        return asyncio.run(_run(config, domain, watcher))
    # The key check runs once, here: it imports litellm (seconds of CPU) before the fork, so
    # no worker imports it again, and a missing key is one sentence with no results file.
    check_models(
        models_called(simulations.config, tasks, simulations.grader.judge, simulations.reviewer)
    )
    preload(domain)
    pool = ProcessPool(
        simulations,
        count,
        server=config.server,
        token=config.server_token,
        provider_limits=config.provider_limits or {},
    )
    try:
        return asyncio.run(_drive(Runner(simulations, pool), config, watcher))
    finally:
        pool.close()


def start_notes(runner: Runner, config: RunConfig, todo: int) -> list[str]:
    """What a run says before its first simulation: the tasks its agent cannot run (left out,
    as the reference leaves them out), and what a resumed run kept."""
    notes = []
    note = runner.selection.note(config.agent) if runner.selection else None
    if note:
        notes.append(f"{note}; the results header lists them (filtered_tasks)")
    if runner.kept:
        notes.append(
            f"resuming {config.save_to}: kept {runner.kept} finished simulation"
            f"{'' if runner.kept == 1 else 's'}, {todo} to run"
        )
    return notes


async def _drive(runner: Runner, config: RunConfig, watcher: RunWatcher | None) -> ResultsFile:
    """Run every simulation, telling the watcher as the run starts and as each one ends."""
    on_done: Callable[[dict[str, Any]], None] | None = None
    on_start: Callable[[int], None] | None = None
    if watcher is not None:
        on_done = watcher.finished

        def on_start(todo: int) -> None:
            watcher.started(start_notes(runner, config, todo), todo)

    with watcher.watching() if watcher is not None else nullcontext():
        return await runner.run(on_done, on_start)
