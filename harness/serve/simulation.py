"""Simulations played by an outside agent: each runs `SimulationRunner`'s own attempt (episode,
user, orchestrator, grading, record) in a background task, with the outside agent's seat
(`tau_mcp.harness.seat`) as the agent,
so a served simulation is run and graded exactly as `tau-harness run` runs and grades one.

A finished simulation is in the results file's journal before anyone hears how it ended (the
move in flight, `POST .../end`, `GET`). When the file cannot be written, the simulation's answer
says so, the failure is logged, and the hub takes no new simulation. Memory is bounded by the
policy of `SimulationHub` (docs/serve.md): at most MAX_OPEN simulations open at once; one that
waits ABANDON_AFTER_S for its agent's next move is ended as abandoned (an infrastructure error:
never scored, run again on resume); an ended one stays readable KEEP_ENDED_S, and at most
MAX_ENDED are kept, then it is forgotten (its record is in the results file).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import uuid
from pathlib import Path
from typing import Any

from tau_mcp.conversation.messages import dump_message, now
from tau_mcp.grading import Grader
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.harness.config import RunConfig, trial_seed
from tau_mcp.harness.orchestrator import Orchestrator, Termination
from tau_mcp.harness.results import ResultsError, ResultsFile, SimulationRecord, load_results
from tau_mcp.harness.runner import keep_finished
from tau_mcp.harness.seat import OutsideAgent, current_seat
from tau_mcp.harness.serve.channel import Answer, MoveChannel
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tasks import Task


def serve_config(config: RunConfig) -> RunConfig:
    """A served simulation is played once: an outside agent's moves cannot be replayed."""
    return config.replace(max_retries=0, retry_delay=0.0)


def _show_to_channel(orchestrator: Orchestrator) -> None:
    channel = current_seat.get()
    if isinstance(channel, MoveChannel):
        channel.orchestrator = orchestrator  # live views read its trajectory


def serve_simulations(
    backend: EpisodeBackend, domain: Domain, config: RunConfig, grader: Grader | None = None
) -> SimulationRunner:
    """Simulations whose agent is whoever plays the simulation's MCP endpoint: one attempt
    each (a conversation an outside agent has played cannot be replayed)."""
    return SimulationRunner(
        backend,
        domain,
        serve_config(config),
        agent_factory=OutsideAgent,
        grader=grader,
        on_orchestrator=_show_to_channel,
    )


log = logging.getLogger("tau.harness.serve")


class UnknownTask(LookupError):
    pass


class Conflict(ValueError):
    pass


class Unavailable(RuntimeError):
    """The hub takes no new simulation now: its results file cannot be written, or too many
    simulations are open."""


class Simulation:
    """One task trial: the channel the endpoint plays on, and the record once it is over."""

    def __init__(self, runner: SimulationRunner, task: Task, trial: int, seed: int) -> None:
        self.id = str(uuid.uuid4())
        self.runner, self.task, self.trial, self.seed = runner, task, trial, seed
        self.channel = MoveChannel()
        self.record: SimulationRecord | None = None
        self.created = now()
        self.finished = asyncio.Event()
        self.ended_at: float | None = None  # time.monotonic() when its record was settled
        self._task: asyncio.Task | None = None
        self._stop_reason = "the server shut down"

    @property
    def mcp_path(self) -> str:
        return f"/simulations/{self.id}/mcp"

    @property
    def status(self) -> str:
        if self.record is not None:
            return "ended"
        orchestrator = self.channel.orchestrator
        if orchestrator is not None and orchestrator.done:
            return "grading"
        return "open" if self.channel.moves == 0 else "running"

    def start(self, on_finished=None) -> None:
        self._task = asyncio.create_task(self._run(on_finished), name=f"simulation {self.id}")

    async def _run(self, on_finished) -> None:
        try:
            simulation = self.runner.simulate(self.task, self.trial, self.seed)
            record = await self.channel.host(simulation)
        except asyncio.CancelledError:
            self._finish(self._failure(self._stop_reason), on_finished)
            raise
        except Exception as exc:  # noqa: BLE001 - reported in the record, never a crash
            record = self._failure(f"{type(exc).__name__}: {exc}")
        self._finish(record, on_finished)

    def _failure(self, error: str) -> SimulationRecord:
        return self.runner.infrastructure_record(self.task.id, self.trial, self.seed, error)

    def _finish(self, record: SimulationRecord, on_finished) -> None:
        """Settle the record: saved first (`on_finished` journals it), then answered."""
        record.id = self.id
        self.record = record
        final = _final_answer(record)
        if on_finished is not None:
            try:
                on_finished(self)
            except ResultsError as exc:
                record.info = {**(record.info or {}), "not_saved": str(exc)}
                final = Answer(
                    f"The conversation is over, but its result was not saved: {exc}", True
                )
        self.ended_at = time.monotonic()
        self.channel.close(final, _refusal(record))
        self.finished.set()

    async def end(self) -> SimulationRecord:
        """End from the agent's side if still open; wait for the graded record."""
        if not self.channel.closed:
            await self.channel.stop()
        await self.finished.wait()
        assert self.record is not None
        return self.record

    async def cancel(self, reason: str | None = None) -> None:
        """Stop the simulation; its record is an infrastructure error saying `reason`."""
        if reason is not None:
            self._stop_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass

    def view(self) -> dict[str, Any]:
        """The simulation in the reference's results layout; `reward_info` once it has ended."""
        if self.record is not None:
            view = self.record.layout()
            return {**view, "info": {**(view.get("info") or {}), "status": "ended"}}
        orchestrator = self.channel.orchestrator
        messages = [dump_message(m) for m in orchestrator.trajectory] if orchestrator else []
        return SimulationRecord.in_progress(
            id=self.id,
            task_id=self.task.id,
            trial=self.trial,
            seed=self.seed,
            started=self.created,
            messages=messages,
            status=self.status,
        ).layout()


_ENDINGS = {
    Termination.USER_STOP.value: "The customer has ended the conversation.",
    Termination.AGENT_STOP.value: "You have ended the conversation.",
    Termination.MAX_STEPS.value: "The conversation reached its step limit and is over.",
    Termination.TOO_MANY_ERRORS.value: "The conversation ended after too many failed tool calls.",
    Termination.USER_ERROR.value: "The simulated customer failed; the conversation is over.",
    Termination.AGENT_ERROR.value: "The conversation ended on an invalid agent turn.",
}


def _final_answer(record: SimulationRecord) -> Answer:
    """The result of the move that was in flight when the conversation ended."""
    reason = record.termination_reason
    if record.infrastructure_error:
        error = (record.info or {}).get("error", "")
        return Answer(f"The simulation failed and is over ({error}).", True)
    ending = _ENDINGS.get(str(reason), f"The conversation is over ({reason}).")
    note = f"{ending} Nothing more to do: further calls on this endpoint are refused."
    last = (record.messages or [None])[-1]
    if reason == Termination.USER_STOP.value and last and last.get("content"):
        return Answer(f"{last['content']}\n\n[{note}]")
    return Answer(f"[{note}]", reason not in (Termination.USER_STOP, Termination.AGENT_STOP))


def _refusal(record: SimulationRecord) -> str:
    return (
        f"Error: this simulation has ended ({record.termination_reason}); "
        "start a new one with POST /simulations."
    )


class SimulationHub:
    """The simulations of one server, and the results file finished ones are appended to."""

    #: The memory policy (docs/serve.md); an instance may set its own.
    MAX_OPEN = 1000  # simulations open at once (not yet ended)
    ABANDON_AFTER_S = 900.0  # waiting this long for the agent's next move: ended as abandoned
    KEEP_ENDED_S = 600.0  # an ended simulation stays readable this long ...
    MAX_ENDED = 1000  # ... and at most this many are kept (the oldest go first)
    SWEEP_EVERY_S = 5.0

    def __init__(self, runner: SimulationRunner, save_to: Path | None = None) -> None:
        self.runner = runner
        self.domain = runner.domain
        self.simulations: dict[str, Simulation] = {}
        self.results: ResultsFile | None = None
        self.write_error: str | None = None  # set when the results file could not be written
        self._saved: set[tuple[str, int]] = set()
        # Simulations not yet ended, by id, with their (task, trial): creation checks the cap
        # and duplicates against these in O(1) instead of walking every kept simulation.
        self._open: dict[str, tuple[str, int]] = {}
        self._open_keys: collections.Counter[tuple[str, int]] = collections.Counter()
        self._sweeper: asyncio.Task | None = None
        runner.user_guidelines()  # a data folder without them fails now, not per simulation
        if save_to is not None:
            self.results = ResultsFile(save_to, runner.info(), [])
            if Path(save_to).exists():
                self._saved = keep_finished(
                    self.results, Path(save_to), self.domain.name, self.domain.tasks
                )
                previous = load_results(Path(save_to))
                self.results.header["tasks"] = list(previous.get("tasks") or [])
            self.results.save()

    def task(self, task_id: str) -> Task:
        if task_id not in self.domain.tasks:
            raise UnknownTask(f"unknown task '{task_id}' in domain '{self.domain.name}'")
        return self.domain.task(task_id)

    def create(self, task_id: str, trial: int = 0) -> Simulation:
        task = self.task(task_id)
        if self.write_error is not None:
            raise Unavailable(f"{self.write_error}; this server takes no new simulations")
        open_now = len(self._open)
        if open_now >= self.MAX_OPEN:
            raise Unavailable(
                f"{open_now} simulations are open, the most this server holds; end some, or "
                f"wait: one with no move for {self.ABANDON_AFTER_S:.0f} s is ended"
            )
        key = (task_id, trial)
        # An ended simulation that was not an infrastructure error is in _saved (journaled), or
        # the write failed and write_error already refuses every creation.
        if self.results is not None and (key in self._saved or self._open_keys[key]):
            raise Conflict(
                f"task '{task_id}' trial {trial} is already in {self.results.path}; "
                "use another trial or results file"
            )
        simulation = Simulation(
            self.runner, task, trial, trial_seed(self.runner.config.seed, trial)
        )
        self.simulations[simulation.id] = simulation
        self._open[simulation.id] = key
        self._open_keys[key] += 1
        simulation.start(self._on_finished)
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep_forever(), name="simulation sweeper")
        return simulation

    def get(self, simulation_id: str) -> Simulation | None:
        return self.simulations.get(simulation_id)

    def _on_finished(self, simulation: Simulation) -> None:
        """Journal a finished simulation; a failed write is logged, stops new simulations and
        is raised (the simulation's answer then says its result was not saved)."""
        key = self._open.pop(simulation.id, None)
        if key is not None:
            self._open_keys[key] -= 1
            if not self._open_keys[key]:
                del self._open_keys[key]
        if self.results is None or simulation.record is None:
            return
        try:
            tasks = self.results.header["tasks"]
            if not any(t.get("id") == simulation.task.id for t in tasks):
                tasks.append(simulation.task.model_dump(mode="json", exclude_none=True))
                # The file lists a task before any simulation of it reaches the journal:
                # readers refuse a simulation of a task the file does not list.
                self.results.save()
            self.results.add(simulation.record)
        except ResultsError as exc:
            if self.write_error is None:
                self.write_error = str(exc)
                log.error("%s; tau-harness serve takes no new simulations", exc)
            raise
        if not simulation.record.infrastructure_error:
            self._saved.add((simulation.task.id, simulation.trial))

    # --- the memory policy ----------------------------------------------------------------------
    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.SWEEP_EVERY_S)
            await self.sweep()

    async def sweep(self) -> None:
        """End simulations whose agent has gone quiet, and forget old ended ones."""
        moment = time.monotonic()
        quiet = [
            s
            for s in self.simulations.values()
            if s.record is None
            and not s.channel.busy
            and moment - s.channel.last_activity >= self.ABANDON_AFTER_S
        ]
        reason = f"abandoned: no move from the agent for {self.ABANDON_AFTER_S:.0f} s"
        await asyncio.gather(*(s.cancel(reason) for s in quiet))
        ended = sorted(
            (s for s in self.simulations.values() if s.ended_at is not None),
            key=lambda s: s.ended_at or 0.0,
        )
        surplus = len(ended) - self.MAX_ENDED
        for index, simulation in enumerate(ended):
            expired = moment - (simulation.ended_at or moment) >= self.KEEP_ENDED_S
            if index < surplus or expired:
                self.simulations.pop(simulation.id, None)

    async def close(self) -> None:
        """Stop open simulations (recorded as infrastructure errors) and finish the file."""
        if self._sweeper is not None:
            self._sweeper.cancel()
        await asyncio.gather(*(s.cancel() for s in self.simulations.values()))
        if self.results is not None:
            self.results.finish()


def make_hub(
    backend: EpisodeBackend, domain: Domain, config: RunConfig, save_to: Path | None = None
) -> SimulationHub:
    """A serve app's simulations of `domain`, finished ones appended to `save_to`."""
    return SimulationHub(serve_simulations(backend, domain, config), save_to)


__all__ = [
    "Conflict",
    "Simulation",
    "SimulationHub",
    "Unavailable",
    "UnknownTask",
    "make_hub",
    "serve_config",
    "serve_simulations",
]
