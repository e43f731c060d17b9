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
import signal
import threading
from collections.abc import Callable, Coroutine
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Protocol

from tau_mcp.conversation.llm import litellm_module, set_request_gate
from tau_mcp.conversation.reference_texts import reference_texts
from tau_mcp.harness.agents import agent_class
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.harness.benchmarks import benchmark_of, with_benchmark_defaults
from tau_mcp.harness.cassettes import needs_no_model
from tau_mcp.harness.config import OUTSIDE_AGENTS, RunConfig
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.preflight import (
    check_known,
    check_models,
    first_request_check,
    models_called,
)
from tau_mcp.harness.prompt_sets import with_llm_defaults
from tau_mcp.harness.results import ResultsFile, SimulationRecord
from tau_mcp.harness.runner import Runner, SimulationExecutor
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import load_domain, load_now, open_backend, use_taubench_data_dir
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.simulator.registry import user_class

__all__ = ["RunStopped", "RunWatcher", "run", "simulations_for", "start_notes", "until_stopped"]

TURN_ROLES = {"agent", "user"}  # models called in every turn (the judge only at grading)


class RunWatcher(Protocol):
    """What a caller sees of a run as it goes (the command line's progress bar). `watching` is
    entered once the batch is about to start (after any worker processes are forked) and left
    when it ends, an error included; `started` gets what the run says before its first
    simulation and how many it will run; `finished` each record as it is saved.

    Two more are called when a watcher has them: `loading()` as soon as the run's keys are
    checked, before the data is read (so the caller can say at once that the run started),
    and `began(task_id, trial)` as each simulation starts."""

    def watching(self) -> AbstractContextManager[Any]: ...

    def started(self, notes: list[str], todo: int) -> None: ...

    def finished(self, record: SimulationRecord) -> None: ...


def run(config: RunConfig, watcher: RunWatcher | None = None) -> ResultsFile:
    """Run every simulation `config` asks for (the missing ones, when its results file exists)
    and return the results: `.header` and `.simulations`. Blocks; call it where no event loop
    runs (a notebook's loop: run it in a thread)."""
    try:
        use_taubench_data_dir(config.taubench_data_dir)
        domain = load_domain(
            config.domain,
            config.data_dir,
            "lazy",
            task_set=config.task_set_name,
            domain_paths=config.domain_paths,
        )
        # who plays (an unknown name says so before a key it would not need), then the
        # agent's and user's keys, before any data is read (the judge's waits for the tasks:
        # only NL assertions call it)
        playing = with_benchmark_defaults(config, domain)  # a τ-bench domain's own names
        if playing.agent not in OUTSIDE_AGENTS:
            agent_class(playing.agent)
        user_class(playing.user, benchmark_of(domain).name)
        if not needs_no_model(config):  # a strict replay reaches no model: no key is needed
            texts = reference_texts(domain.data_dir)
            check_known(models_called(with_llm_defaults(playing, texts), []))
        loading = getattr(watcher, "loading", None)
        if loading is not None:
            loading()
        load_now(domain)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    if config.ray is None and config.workers is not None and config.workers != 1:
        return _run_with_workers(config, domain, watcher)
    return until_stopped(_run(config, domain, watcher))


class RunStopped(KeyboardInterrupt):
    """The run was stopped by SIGTERM, as Ctrl-C stops it (KeyboardInterrupt): the simulations
    in flight were cancelled and the results file holds every finished one."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def until_stopped(main: Coroutine[Any, Any, ResultsFile]) -> ResultsFile:
    """`asyncio.run(main)`, with SIGTERM (in the main thread) stopping the run the way Ctrl-C
    does: asyncio's runner cancels the main task on SIGINT and raises KeyboardInterrupt; on
    SIGTERM the task is cancelled too and RunStopped is raised. Either way the batch folds its
    journal into the results file on the way out (`Runner.run`)."""
    received: list[int] = []

    async def stoppable() -> ResultsFile:
        loop, task = asyncio.get_running_loop(), asyncio.current_task()
        assert task is not None
        handled = threading.current_thread() is threading.main_thread()
        if handled:
            loop.add_signal_handler(
                signal.SIGTERM, lambda: (received.append(signal.SIGTERM), task.cancel())
            )
        try:
            return await main
        finally:
            if handled:
                loop.remove_signal_handler(signal.SIGTERM)

    try:
        return asyncio.run(stoppable())
    except asyncio.CancelledError:
        if received:
            raise RunStopped(received[0]) from None
        raise


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
        if needs_no_model(config):  # a strict replay reaches no model: no key is needed
            uses = []
        # A replay whose misses go live checks as its first live request goes out.
        lazy = any(u.role in TURN_ROLES for u in uses) or config.replay is not None
        check_now = config.ray is not None or not lazy
        # the keys known without litellm are checked here and now (the judge's and the
        # reviewer's are new since `run` checked the agent's and user's); the others as above
        uses = check_known(uses)
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
        return until_stopped(_run(config, domain, watcher))
    # The key check runs once, here: a missing key is one sentence with no results file. A run
    # calling models imports litellm (seconds of CPU) before the fork, so no worker imports
    # it again.
    uses = []
    if not needs_no_model(config):
        uses = models_called(
            simulations.config, tasks, simulations.grader.judge, simulations.reviewer
        )
    check_models(uses)
    if uses:
        litellm_module()
    preload(domain)
    pool = ProcessPool(
        simulations,
        count,
        server=config.server,
        token=config.server_token,
        provider_limits=config.provider_limits or {},
    )
    try:
        return until_stopped(_drive(Runner(simulations, pool), config, watcher))
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
    on_begin: Callable[[Any, int], None] | None = None
    if watcher is not None:
        on_done = watcher.finished
        began = getattr(watcher, "began", None)
        if began is not None:

            def on_begin(task: Any, trial: int) -> None:
                began(task.id, trial)

        def on_start(todo: int) -> None:
            watcher.started(start_notes(runner, config, todo), todo)

    with watcher.watching() if watcher is not None else nullcontext():
        return await runner.run(on_done, on_start, on_begin)
