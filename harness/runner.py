"""Running many simulations: task selection, concurrency, retries, grading, saving, resuming."""

from __future__ import annotations

import asyncio
import random
import subprocess
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from conversation.messages import dump_message, now
from conversation.reference_prompts import compose_policy, user_guidelines_path
from conversation.reference_texts import reference_texts
from harness import redaction
from harness.agents import Agent, AgentContext, OracleAgent, agent_class
from harness.agents.stop_tool import solo_stop_tool
from harness.backends import EpisodeBackend, EpisodeRef, ToolInfo
from harness.errors import ConfigError
from harness.grading import Grader, Judge
from harness.metrics import INFRA
from harness.orchestrator import (
    DEFAULT_MAX_ERRORS,
    DEFAULT_MAX_STEPS,
    GREETING,
    Limits,
    Orchestrator,
    history_messages,
)
from harness.prompt_sets import (
    first_agent_message,
    prompt_set_info,
    user_tools_for,
    with_llm_defaults,
)
from harness.results import ResultsFile, check_tasks, load_results
from harness.results_lock import results_lock
from harness.resume_check import check_no_orphan_journal, check_resumable
from harness.task_group import gather_or_cancel
from servers.engine.data import user_guidelines
from servers.engine.domain import Domain
from servers.engine.errors import EngineError
from servers.engine.tasks import Task
from simulator.base import UserContext, UserSimulator
from simulator.registry import user_class

DEFAULT_SEED = 300

__all__ = ["ConfigError", "RunConfig", "Runner", "make_runner", "select_tasks"]


class SimulationExecutor(Protocol):
    """Runs one simulation somewhere else and returns its record (graded, or an
    infrastructure-error record after the same retries a local run makes)."""

    async def simulate(self, task: Task, trial: int, seed: int) -> dict[str, Any]: ...


@dataclass
class RunConfig:
    domain: str
    agent: str = "llm"
    agent_llm: str | None = None
    #: None: the prompt set's defaults; a dict replaces them (see harness.prompt_sets).
    agent_llm_args: dict[str, Any] | None = None
    user: str = "llm"
    user_llm: str | None = None
    user_llm_args: dict[str, Any] | None = None
    task_split: str | None = "base"
    task_ids: list[str] | None = None
    num_tasks: int | None = None
    num_trials: int = 1
    max_concurrency: int = 3
    seed: int = DEFAULT_SEED
    max_steps: int = DEFAULT_MAX_STEPS
    max_errors: int = DEFAULT_MAX_ERRORS
    max_retries: int = 3
    enforce_protocol: bool = False
    retry_delay: float = 1.0
    judge: Judge | None = None
    save_to: Path | None = None


def select_tasks(domain: Domain, config: RunConfig) -> list[Task]:
    try:
        ids = domain.task_ids(config.task_split)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    if config.task_ids:
        unknown = [t for t in config.task_ids if t not in domain.tasks]
        if unknown:
            raise ConfigError(f"unknown task id(s) in domain '{domain.name}': {', '.join(unknown)}")
        ids = [t for t in config.task_ids]
    if config.num_tasks is not None:
        ids = ids[: config.num_tasks]
    return [domain.task(t) for t in ids]


def trial_seeds(seed: int, trials: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(0, 1_000_000) for _ in range(trials)]


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


class Runner:
    def __init__(
        self,
        backend: EpisodeBackend,
        domain: Domain,
        config: RunConfig,
        *,
        agent_cls: type[Agent] | None = None,
        user_cls: type[UserSimulator] | None = None,
    ) -> None:
        """`agent_cls`/`user_cls` replace the classes named in the config (the step-wise
        integrations seat an outside policy on one side this way)."""
        self.texts = reference_texts(domain.data_dir)
        config = with_llm_defaults(config, self.texts)
        # Keys in the model arguments are redacted by value wherever this process writes or
        # prints (an error that echoes one included); see harness.redaction.
        redaction.remember_args([config.agent_llm_args, config.user_llm_args])
        if config.judge is not None:
            redaction.remember_args(config.judge.llm_args)
        self.backend, self.domain, self.config = backend, domain, config
        self.agent_cls: type[Agent] = agent_cls or self._agent_class(config.agent)
        self.user_cls: type[UserSimulator] = user_cls or user_class(config.user)
        self.solo = self.agent_cls.solo or config.user == "dummy"
        if self.solo and config.user != "dummy":
            raise ConfigError(f"the {config.agent} agent works alone; use --user dummy")
        works_alone = self.agent_cls.solo or issubclass(self.agent_cls, OracleAgent)
        if config.user == "dummy" and not works_alone:
            raise ConfigError(
                "the dummy user only works with a solo agent (--agent solo or oracle)"
            )
        if config.agent in ("llm", "solo") and not config.agent_llm:
            raise ConfigError(f"the {config.agent} agent needs a model: pass --agent-llm")
        if config.user == "llm" and not config.user_llm:
            raise ConfigError("the llm user needs a model: pass --user-llm")
        self.grader = Grader(backend, domain, config.judge)
        self.has_user_tools = domain.spec.user_tools is not None
        self.policy = domain.policy(solo=self.solo)
        if self.texts is not None:
            self.policy = compose_policy(self.texts, domain.name, self.solo) or self.policy
        self._guidelines: str | None = None
        #: Where simulations run: None runs them here; an executor (e.g. a Ray pool) elsewhere.
        self.executor: SimulationExecutor | None = None

    # --- results header ---------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        c = self.config
        return {
            "git_commit": _git_commit(),
            "num_trials": c.num_trials,
            "max_steps": c.max_steps,
            "max_errors": c.max_errors,
            "user_info": {
                "implementation": c.user,
                "llm": c.user_llm,
                "llm_args": c.user_llm_args or None,
                "global_simulation_guidelines": self._guidelines,
            },
            "agent_info": {
                "implementation": c.agent,
                "llm": c.agent_llm,
                "llm_args": c.agent_llm_args or None,
            },
            "environment_info": {
                "domain_name": self.domain.name,
                "policy": self.policy,
                "tool_defs": None,
            },
            "seed": c.seed,
            "judge_llm": self.grader.judge.model if self.grader.judge else None,
            "judge_llm_args": self.grader.judge.llm_args if self.grader.judge else None,
            "enforce_communication_protocol": c.enforce_protocol,
            "prompt_set": prompt_set_info(self.texts),
        }

    def user_guidelines(self) -> str | None:
        if self._guidelines is None and self.config.user == "llm" and self.texts is not None:
            path = user_guidelines_path(self.texts, self.has_user_tools)
            self._guidelines = self.texts.data_file(path)
        if self._guidelines is None and self.config.user == "llm":
            try:
                self._guidelines = user_guidelines(self.domain.data_dir, self.has_user_tools)
            except EngineError as exc:
                if not self.has_user_tools:
                    raise ConfigError(str(exc)) from None
                # A data folder without the tools variant still has the plain guidelines.
                try:
                    self._guidelines = user_guidelines(self.domain.data_dir, False)
                except EngineError:
                    raise ConfigError(str(exc)) from None
        return self._guidelines

    def _agent_class(self, name: str) -> type[Agent]:
        """The class behind `--agent` (the MCP-hosting runners of `harness.serve` differ)."""
        return agent_class(name)

    # --- one simulation ---------------------------------------------------------------------
    async def simulate(self, task: Task, trial: int, seed: int) -> dict[str, Any]:
        """Run, grade and clean up one simulation; retry infrastructure failures."""
        last_error = ""
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.config.retry_delay)
            try:
                sim = await self._attempt(task, trial, seed)
                sim["info"]["attempts"] = attempt + 1
                return sim
            except (ConfigError, EngineError):
                raise
            except Exception as exc:  # noqa: BLE001 - anything else is retried, then recorded
                last_error = f"{type(exc).__name__}: {exc}"
        return self.infrastructure_record(task.id, trial, seed, last_error)

    def infrastructure_record(
        self, task_id: str, trial: int, seed: int, error: str
    ) -> dict[str, Any]:
        """The record of a simulation that failed for infrastructure reasons after every retry;
        it is never scored, and a resumed run tries it again. A key the error echoes (some
        providers do) is redacted here, so no copy of the record holds it."""
        error = redaction.redact_text(error)
        stamp = now()
        return {
            "id": str(uuid.uuid4()),
            "task_id": task_id,
            "timestamp": stamp,
            "start_time": stamp,
            "end_time": stamp,
            "duration": 0.0,
            "termination_reason": INFRA,
            "agent_cost": None,
            "user_cost": None,
            "reward_info": None,
            "messages": [],
            "trial": trial,
            "seed": seed,
            "mode": "half_duplex",
            "info": {"error": error, "attempts": self.config.max_retries + 1},
        }

    async def _attempt(self, task: Task, trial: int, seed: int) -> dict[str, Any]:
        ref = await self.backend.create_episode(self.domain.name, task.id)
        sessions: list = []
        try:
            orchestrator = await self._orchestrator(task, seed, ref, sessions)
            conversation = await orchestrator.run(history_messages(task))
            reward_info = await self.grader.grade(
                task, conversation.messages, conversation.termination.value, ref
            )
        finally:
            for session in sessions:
                await session.close()
            await self._forget(ref)
        return self._record(task, trial, seed, conversation, reward_info, ref)

    async def _orchestrator(
        self, task: Task, seed: int, ref: EpisodeRef, sessions: list
    ) -> Orchestrator:
        """The episode's tool sessions (appended to `sessions` for closing), the agent, the
        user and the orchestrator that will run them."""
        agent_session = await self.backend.open_session(ref, "agent")
        sessions.append(agent_session)
        user_session = None
        if self.has_user_tools:
            user_session = await self.backend.open_session(ref, "user")
            sessions.append(user_session)
        agent_tools = await agent_session.list_tools()
        user_tools: list[ToolInfo] = await user_session.list_tools() if user_session else []
        agent = self._make_agent(task, agent_tools + (user_tools if self.solo else []), seed)
        user = self._make_user(
            task, [] if self.solo else user_tools_for(task, user_tools, self.texts), seed
        )
        return Orchestrator(
            agent,
            user,
            agent_session,
            user_session,
            limits=Limits(self.config.max_steps, self.config.max_errors),
            solo=self.solo,
            user_tool_names={t.name for t in user_tools},
            agent_tool_names={t.name for t in agent_tools},
            enforce_protocol=self.config.enforce_protocol,
            greeting=first_agent_message(self.texts, GREETING),
        )

    async def _forget(self, ref: EpisodeRef) -> None:
        try:
            await self.backend.delete_episode(ref)
        except Exception:  # noqa: BLE001 - the server evicts old episodes anyway
            pass

    def _make_agent(self, task: Task, tools: list[ToolInfo], seed: int) -> Agent:
        context = AgentContext(
            task=task,
            domain=self.domain.name,
            policy=self.policy,
            tools=tools,
            llm=self.config.agent_llm,
            llm_args=dict(self.config.agent_llm_args or {}),
            solo=self.solo,
            seed=seed,
            stop_tool=solo_stop_tool(self.domain) if self.solo else None,
            texts=self.texts,
        )
        try:
            return self.agent_cls(context)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _make_user(self, task: Task, tools: list[ToolInfo], seed: int) -> UserSimulator:
        context = UserContext(
            task=task,
            domain=self.domain.name,
            guidelines=self.user_guidelines(),
            tools=tools,
            llm=self.config.user_llm,
            llm_args=dict(self.config.user_llm_args or {}),
            seed=seed,
            texts=self.texts,
        )
        try:
            return self.user_cls(context)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _record(self, task, trial, seed, conversation, reward_info, ref) -> dict[str, Any]:
        messages = [dump_message(m) for m in conversation.messages]
        agent_costs = [
            m["cost"] for m in messages if m["role"] == "assistant" and m.get("cost") is not None
        ]
        user_costs = [
            m["cost"] for m in messages if m["role"] == "user" and m.get("cost") is not None
        ]
        return {
            "id": str(uuid.uuid4()),
            "task_id": task.id,
            "timestamp": conversation.end_time,
            "start_time": conversation.start_time,
            "end_time": conversation.end_time,
            "duration": conversation.duration,
            "termination_reason": conversation.termination.value,
            "agent_cost": sum(agent_costs) if agent_costs else None,
            "user_cost": sum(user_costs) if user_costs else None,
            "reward_info": reward_info,
            "messages": messages,
            "trial": trial,
            "seed": seed,
            "mode": "half_duplex",
            "info": {
                "episode_id": ref.episode_id,
                "steps": conversation.steps,
                "tool_errors": conversation.tool_errors,
                "history_length": conversation.history_length,
            },
        }

    # --- many simulations -------------------------------------------------------------------
    async def run(
        self,
        on_done: Callable[[dict[str, Any]], None] | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> ResultsFile:
        """Run every missing simulation, holding the results file's lock throughout."""
        with results_lock(self.config.save_to):
            check_no_orphan_journal(self.config.save_to)
            return await self._run_locked(on_done, on_start)

    async def _run_locked(
        self,
        on_done: Callable[[dict[str, Any]], None] | None = None,
        on_start: Callable[[int], None] | None = None,
    ) -> ResultsFile:
        config = self.config
        tasks = select_tasks(self.domain, config)
        self.user_guidelines()
        results = ResultsFile(
            config.save_to,
            self.info(),
            [t.model_dump(mode="json", exclude_none=True) for t in tasks],
        )
        done: set[tuple[str, int]] = set()
        fresh = config.save_to is None or not Path(config.save_to).exists()
        if not fresh:
            done = self._resume(results, Path(config.save_to))
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
                if self.executor is None:
                    sim = await self.simulate(task, trial, seeds[trial])
                else:
                    sim = await self.executor.simulate(task, trial, seeds[trial])
            results.add(sim)
            if on_done is not None:
                on_done(sim)

        try:
            await gather_or_cancel(*(one(task, trial) for task, trial in todo))
        except ConfigError:
            # The run could not start for real (say, a model's key is missing, found as the
            # first request went out): a file this run created holds nothing worth keeping.
            if fresh and not results.simulations:
                results.discard()
            raise
        results.finish()
        return results

    def _resume(self, results: ResultsFile, path: Path) -> set[tuple[str, int]]:
        """Keep a previous run's finished simulations (infrastructure failures are re-run)."""
        previous = load_results(path)
        old_domain = ((previous.get("info") or {}).get("environment_info") or {}).get("domain_name")
        if old_domain not in (None, self.domain.name):
            raise ConfigError(
                f"{path} holds a run on domain '{old_domain}', not '{self.domain.name}'"
            )
        check_tasks(path, previous, self.domain.tasks)
        check_resumable(path, previous, results.header)
        done = set()
        for sim in previous["simulations"]:
            if sim.get("termination_reason") == INFRA:
                continue
            # load_results leaves one result per (task, trial): different copies are refused
            done.add((str(sim.get("task_id")), int(sim.get("trial") or 0)))
            results.add(sim, save=False)
        return done


def make_runner(
    backend: EpisodeBackend,
    domain: Domain,
    config: RunConfig,
    agent_cmd: str | None = None,
    timeout: float | None = None,
) -> Runner:
    """The runner for `tau-harness run`: the command runner for `--agent cmd` (which hosts an
    MCP server, so its modules load only then), else the usual."""
    if config.agent == "cmd":
        if not agent_cmd or not agent_cmd.strip():
            raise ConfigError('--agent cmd needs the program to run: --agent-cmd "COMMAND"')
        from harness.serve.command import CommandRunner

        return CommandRunner(backend, domain, config, agent_cmd, timeout)
    if agent_cmd:
        raise ConfigError("--agent-cmd goes with --agent cmd")
    if timeout is not None:
        raise ConfigError("--timeout applies to --agent cmd runs only")
    return Runner(backend, domain, config)
