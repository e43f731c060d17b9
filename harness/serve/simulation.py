"""Simulations played by an outside agent: each runs `SimulationRunner`'s own attempt (episode,
user, orchestrator, grading, record) in a background task, with the `OutsideAgent` as the agent,
so a served simulation is run and graded exactly as `tau-harness run` runs and grades one.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

from conversation.messages import dump_message, now
from grading import Grader
from harness.backends import EpisodeBackend
from harness.config import RunConfig, trial_seed
from harness.metrics import INFRA
from harness.orchestrator import Orchestrator, Termination
from harness.results import ResultsFile, load_results
from harness.runner import keep_finished
from harness.serve.channel import Answer, MoveChannel, OutsideAgent, current_channel
from harness.simulate import SimulationRunner
from servers.engine.domain import Domain
from servers.engine.tasks import Task


def serve_config(config: RunConfig) -> RunConfig:
    """A served simulation is played once: an outside agent's moves cannot be replayed."""
    return replace(config, max_retries=0, retry_delay=0.0)


def _show_to_channel(orchestrator: Orchestrator) -> None:
    channel = current_channel.get()
    if channel is not None:
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


class UnknownTask(LookupError):
    pass


class Conflict(ValueError):
    pass


class Simulation:
    """One task trial: the channel the endpoint plays on, and the record once it is over."""

    def __init__(self, runner: SimulationRunner, task: Task, trial: int, seed: int) -> None:
        self.id = str(uuid.uuid4())
        self.runner, self.task, self.trial, self.seed = runner, task, trial, seed
        self.channel = MoveChannel()
        self.record: dict[str, Any] | None = None
        self.created = now()
        self.finished = asyncio.Event()
        self._task: asyncio.Task | None = None

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
        current_channel.set(self.channel)
        try:
            record = await self.runner.simulate(self.task, self.trial, self.seed)
        except asyncio.CancelledError:
            self._finish(self._failure("the server shut down"), on_finished)
            raise
        except Exception as exc:  # noqa: BLE001 - reported in the record, never a crash
            record = self._failure(f"{type(exc).__name__}: {exc}")
        self._finish(record, on_finished)

    def _failure(self, error: str) -> dict[str, Any]:
        return self.runner.infrastructure_record(self.task.id, self.trial, self.seed, error)

    def _finish(self, record: dict[str, Any], on_finished) -> None:
        record["id"] = self.id
        self.record = record
        self.channel.close(_final_answer(record), _refusal(record))
        self.finished.set()
        if on_finished is not None:
            on_finished(self)

    async def end(self) -> dict[str, Any]:
        """End from the agent's side if still open; wait for the graded record."""
        if not self.channel.closed:
            await self.channel.stop()
        await self.finished.wait()
        assert self.record is not None
        return self.record

    async def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):  # noqa: BLE001
                pass

    def view(self) -> dict[str, Any]:
        """The simulation in the reference's results layout; `reward_info` once it has ended."""
        if self.record is not None:
            return {**self.record, "info": {**self.record.get("info", {}), "status": "ended"}}
        orchestrator = self.channel.orchestrator
        messages = [dump_message(m) for m in orchestrator.trajectory] if orchestrator else []
        return {
            "id": self.id,
            "task_id": self.task.id,
            "timestamp": self.created,
            "start_time": self.created,
            "end_time": None,
            "duration": None,
            "termination_reason": None,
            "agent_cost": None,
            "user_cost": None,
            "reward_info": None,
            "messages": messages,
            "trial": self.trial,
            "seed": self.seed,
            "mode": "half_duplex",
            "info": {"status": self.status},
        }


_ENDINGS = {
    Termination.USER_STOP.value: "The customer has ended the conversation.",
    Termination.AGENT_STOP.value: "You have ended the conversation.",
    Termination.MAX_STEPS.value: "The conversation reached its step limit and is over.",
    Termination.TOO_MANY_ERRORS.value: "The conversation ended after too many failed tool calls.",
    Termination.USER_ERROR.value: "The simulated customer failed; the conversation is over.",
    Termination.AGENT_ERROR.value: "The conversation ended on an invalid agent turn.",
}


def _final_answer(record: dict[str, Any]) -> Answer:
    """The result of the move that was in flight when the conversation ended."""
    reason = record.get("termination_reason")
    if reason == INFRA:
        error = (record.get("info") or {}).get("error", "")
        return Answer(f"The simulation failed and is over ({error}).", True)
    ending = _ENDINGS.get(str(reason), f"The conversation is over ({reason}).")
    note = f"{ending} Nothing more to do: further calls on this endpoint are refused."
    last = (record.get("messages") or [None])[-1]
    if reason == Termination.USER_STOP.value and last and last.get("content"):
        return Answer(f"{last['content']}\n\n[{note}]")
    return Answer(f"[{note}]", reason not in (Termination.USER_STOP, Termination.AGENT_STOP))


def _refusal(record: dict[str, Any]) -> str:
    return (
        f"Error: this simulation has ended ({record.get('termination_reason')}); "
        "start a new one with POST /simulations."
    )


class SimulationHub:
    """The simulations of one server, and the results file finished ones are appended to."""

    def __init__(self, runner: SimulationRunner, save_to: Path | None = None) -> None:
        self.runner = runner
        self.domain = runner.domain
        self.simulations: dict[str, Simulation] = {}
        self.results: ResultsFile | None = None
        self._saved: set[tuple[str, int]] = set()
        runner.user_guidelines()  # a data folder without them fails now, not per simulation
        if save_to is not None:
            self.results = ResultsFile(save_to, runner.info(), [])
            if Path(save_to).exists():
                self._saved = keep_finished(self.results, Path(save_to), self.domain.name)
                previous = load_results(Path(save_to))
                self.results.header["tasks"] = list(previous.get("tasks") or [])
            self.results.save()

    def task(self, task_id: str) -> Task:
        if task_id not in self.domain.tasks:
            raise UnknownTask(f"unknown task '{task_id}' in domain '{self.domain.name}'")
        return self.domain.task(task_id)

    def create(self, task_id: str, trial: int = 0) -> Simulation:
        task = self.task(task_id)
        if self.results is not None:
            live = {
                (s.task.id, s.trial)
                for s in self.simulations.values()
                if s.record is None or s.record.get("termination_reason") != INFRA
            }
            if (task_id, trial) in self._saved or (task_id, trial) in live:
                raise Conflict(
                    f"task '{task_id}' trial {trial} is already in {self.results.path}; "
                    "use another trial or results file"
                )
        simulation = Simulation(
            self.runner, task, trial, trial_seed(self.runner.config.seed, trial)
        )
        self.simulations[simulation.id] = simulation
        simulation.start(self._on_finished)
        return simulation

    def get(self, simulation_id: str) -> Simulation | None:
        return self.simulations.get(simulation_id)

    def _on_finished(self, simulation: Simulation) -> None:
        if self.results is None or simulation.record is None:
            return
        tasks = self.results.header["tasks"]
        if not any(t.get("id") == simulation.task.id for t in tasks):
            tasks.append(simulation.task.model_dump(mode="json", exclude_none=True))
        self.results.add(simulation.record)
        if simulation.record.get("termination_reason") != INFRA:
            self._saved.add((simulation.task.id, simulation.trial))

    async def close(self) -> None:
        """Stop open simulations (recorded as infrastructure errors) and finish the file."""
        await asyncio.gather(*(s.cancel() for s in self.simulations.values()))
        if self.results is not None:
            self.results.finish()


__all__ = [
    "Conflict",
    "Simulation",
    "SimulationHub",
    "UnknownTask",
    "serve_config",
    "serve_simulations",
]
