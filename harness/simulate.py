"""One simulation: an episode on the backend, the agent and the user built by their factories,
the orchestrator running the conversation, the grader scoring it, and its record.

`SimulationRunner` is the piece every way of running simulations shares: `tau-harness run` (in
this process, in worker processes, on Ray actors), `tau-harness serve`, `play`, and the
Gymnasium, verifiers and Inspect integrations. Who sits in each seat is a factory passed in (a
class taking an `AgentContext` or a `UserContext`; by default the classes the config names), and
`on_orchestrator` sees each conversation as it starts. Running it here is the local executor
(see `tau_mcp.harness.runner.SimulationExecutor`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_mcp.conversation.messages import dump_message, history_messages
from tau_mcp.conversation.reference_prompts import compose_policy, user_guidelines_path
from tau_mcp.conversation.reference_texts import reference_texts
from tau_mcp.grading import Grader
from tau_mcp.harness import redaction
from tau_mcp.harness.agents import Agent, AgentContext, OracleAgent, agent_class
from tau_mcp.harness.agents.stop_tool import solo_stop_tool
from tau_mcp.harness.backends import EpisodeBackend, EpisodeOptions, EpisodeRef, ToolInfo
from tau_mcp.harness.config import RunConfig, select_tasks
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.orchestrator import GREETING, Limits, Orchestrator
from tau_mcp.harness.prompt_sets import (
    first_agent_message,
    prompt_set_info,
    user_tools_for,
    with_llm_defaults,
)
from tau_mcp.harness.results import (
    AgentInfo,
    EnvironmentInfo,
    RunInfo,
    SimulationRecord,
    UserInfo,
)
from tau_mcp.harness.review import Reviewer
from tau_mcp.servers.engine.data import user_guidelines
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.registry import user_class

AgentFactory = type[Agent]
UserFactory = type[UserSimulator]

#: The results header's policy when each simulation has its own (recorded with the simulation).
TASK_POLICY = "(the policy depends on the task: see each simulation's 'policy')"


def _git_commit() -> str:
    """The commit of the tau-mcp code that runs: its checkout's HEAD when it runs from one
    (an editable install or the source tree), else the commit pip recorded when it installed
    tau-mcp from a git URL, else "unknown". Never the commit of whatever repository the user
    runs in, or keeps a virtualenv in."""
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / ".git").exists():
        try:
            out = subprocess.run(
                ["git", "rev-parse", "HEAD"],
                capture_output=True,
                text=True,
                timeout=5,
                cwd=root,
            )
            return out.stdout.strip() or "unknown"
        except (OSError, subprocess.SubprocessError):
            return "unknown"
    return _installed_commit()


def _installed_commit() -> str:
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        raw = distribution("tau-mcp").read_text("direct_url.json")
        commit = json.loads(raw or "{}").get("vcs_info", {}).get("commit_id")
    except (PackageNotFoundError, ValueError, AttributeError):
        return "unknown"
    return commit if isinstance(commit, str) and commit else "unknown"


async def with_retries(
    attempt: Callable[[], Awaitable[SimulationRecord]],
    config: RunConfig,
    task: Task,
    trial: int,
    seed: int,
) -> SimulationRecord:
    """One simulation's attempts under the run's retry rule: configuration and engine errors
    stop the run, anything else is retried (`max_retries`, `retry_delay`) and, once retries run
    out, recorded as an infrastructure error."""
    last_error = ""
    for number in range(config.max_retries + 1):
        if number:
            await asyncio.sleep(config.retry_delay)
        try:
            record = await attempt()
            record.info["attempts"] = number + 1
            return record
        except (ConfigError, EngineError):
            raise
        except Exception as exc:  # noqa: BLE001 - anything else is retried, then recorded
            last_error = f"{type(exc).__name__}: {exc}"
    return SimulationRecord.infrastructure_failure(
        task.id, trial, seed, last_error, config.max_retries + 1
    )


@dataclass(frozen=True)
class TaskSelection:
    """The tasks a run will simulate: those the options select, less those its agent cannot
    run (`Agent.cannot_run`), which are kept with the reason, as the reference filters a split
    for its gt and solo agents."""

    tasks: list[Task]
    selected: int
    filtered: dict[str, str] = field(default_factory=dict)  # task id -> what it lacks

    def by_reason(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for task_id, reason in self.filtered.items():
            grouped.setdefault(reason, []).append(task_id)
        return grouped

    def note(self, agent: str) -> str | None:
        """One line for the terminal, or None when nothing was left out."""
        if not self.filtered:
            return None
        reasons = "; ".join(
            f"{len(ids)} {'has' if len(ids) == 1 else 'have'} {reason}: {_some(ids)}"
            for reason, ids in self.by_reason().items()
        )
        return (
            f"running {len(self.tasks)} of {self.selected} tasks: the {agent} agent cannot run "
            f"{len(self.filtered)} ({reasons})"
        )

    def header(self, agent: str) -> dict[str, Any] | None:
        """What the results header records about the left-out tasks (None: nothing was)."""
        if not self.filtered:
            return None
        return {
            "agent": agent,
            "selected": self.selected,
            "run": len(self.tasks),
            "by_reason": self.by_reason(),
        }


def _some(ids: list[str], shown: int = 8) -> str:
    head = ", ".join(ids[:shown])
    return head if len(ids) <= shown else f"{head}, ... ({len(ids) - shown} more)"


class SimulationRunner:
    """Runs, grades and cleans up one simulation at a time (any number concurrently)."""

    def __init__(
        self,
        backend: EpisodeBackend,
        domain: Domain,
        config: RunConfig,
        *,
        agent_factory: AgentFactory | None = None,
        user_factory: UserFactory | None = None,
        grader: Grader | None = None,
        on_orchestrator: Callable[[Orchestrator], None] | None = None,
    ) -> None:
        """`agent_factory`/`user_factory` seat someone other than the classes the config names
        (an outside policy, an MCP client, a person); `grader` shares one grader (and its gold
        states) between runners of the same run; `on_orchestrator` sees each conversation
        before it starts (a live view of its trajectory)."""
        self.texts = reference_texts(domain.data_dir)
        config = with_llm_defaults(config, self.texts)
        # Keys in the model arguments are redacted by value wherever this process writes or
        # prints (an error that echoes one included); see harness.redaction.
        redaction.remember_args([config.agent_llm_args, config.user_llm_args])
        if config.judge is not None:
            redaction.remember_args(config.judge.llm_args)
        self.backend, self.domain, self.config = backend, domain, config
        self.agent_factory: AgentFactory = agent_factory or agent_class(config.agent)
        self.user_factory: UserFactory = user_factory or user_class(config.user)
        self.on_orchestrator = on_orchestrator
        self.solo = self.agent_factory.solo or config.user == "dummy"
        if self.solo and config.user != "dummy":
            raise ConfigError(f"the {config.agent} agent works alone; use --user dummy")
        works_alone = self.agent_factory.solo or issubclass(self.agent_factory, OracleAgent)
        if config.user == "dummy" and not works_alone:
            raise ConfigError(
                "the dummy user only works with a solo agent (--agent solo or oracle)"
            )
        if config.agent in ("llm", "solo") and not config.agent_llm:
            raise ConfigError(f"the {config.agent} agent needs a model: pass --agent-llm")
        if config.user == "llm" and not config.user_llm:
            raise ConfigError("the llm user needs a model: pass --user-llm")
        # The retrieval config (banking_knowledge): refused now, in one sentence, when unknown
        # or unable to run here; every episode of the run (and the grader's replays) is created
        # with it.
        self.variant = domain.resolve_variant(config.retrieval_config, config.retrieval_kwargs)
        self.episode_options = (
            EpisodeOptions(self.variant.name, dict(self.variant.kwargs) or None)
            if self.variant is not None
            else None
        )
        self.grader = (
            grader
            if grader is not None
            else Grader(backend, domain, config.judge, self.episode_options)
        )
        self.reviewer = Reviewer.for_data(config.review, domain.data_dir) if config.review else None
        self.has_user_tools = domain.spec.user_tools is not None
        if self.variant is not None:
            self.policy = self.variant.policy(None)
        else:
            self.policy = domain.policy(solo=self.solo)
            if self.texts is not None:
                self.policy = compose_policy(self.texts, domain.name, self.solo) or self.policy
        self._guidelines: str | None = None

    # --- which tasks -------------------------------------------------------------------------
    def select(self) -> TaskSelection:
        """The run's tasks: the selected ones this run's agent can run. Refuses, in one
        sentence, when it can run none of them."""
        chosen = select_tasks(self.domain, self.config)
        check = getattr(self.agent_factory, "cannot_run", None)
        filtered = {}
        if callable(check):
            for task in chosen:
                reason = check(task)
                if reason:
                    filtered[task.id] = reason
        kept = [t for t in chosen if t.id not in filtered]
        if chosen and not kept:
            first = next(iter(filtered))
            raise ConfigError(
                f"the {self.config.agent} agent cannot run any of the {len(chosen)} selected "
                f"tasks (task '{first}' has {filtered[first]}); choose tasks it can run, or "
                "another agent"
            )
        return TaskSelection(kept, len(chosen), filtered)

    # --- what a results file says about the run ---------------------------------------------
    def info(self) -> RunInfo:
        """The results header's `info` for this run."""
        c = self.config
        optional: dict[str, Any] = {}
        if self.reviewer:
            optional["review"] = {"mode": self.reviewer.mode, "model": self.reviewer.model}
        if c.preset is not None:
            optional["preset"] = c.preset
        if self.domain.task_set is not None:  # `--task-set-name`: evaluate rebuilds with it
            optional["task_set_name"] = self.domain.task_set
        judge = self.grader.judge
        return RunInfo.model_construct(
            git_commit=_git_commit(),
            num_trials=c.num_trials,
            max_steps=c.max_steps,
            max_errors=c.max_errors,
            timeout=c.timeout,
            user_info=UserInfo.model_construct(
                implementation=c.user,
                llm=c.user_llm,
                llm_args=c.user_llm_args or None,
                global_simulation_guidelines=self._guidelines,
            ),
            agent_info=AgentInfo.model_construct(
                implementation=c.agent, llm=c.agent_llm, llm_args=c.agent_llm_args or None
            ),
            environment_info=EnvironmentInfo.model_construct(
                domain_name=self.domain.name,
                policy=TASK_POLICY if self._policy_per_task() else self.policy,
                tool_defs=None,
            ),
            seed=c.seed,
            judge_llm=judge.model if judge else None,
            judge_llm_args=judge.llm_args if judge else None,
            enforce_communication_protocol=c.enforce_protocol,
            prompt_set=prompt_set_info(self.texts),
            retrieval_config=self.variant.name if self.variant is not None else None,
            retrieval_config_kwargs=dict(self.variant.kwargs) or None
            if self.variant is not None
            else None,
            **optional,
        )

    def _policy_per_task(self) -> bool:
        """Whether the agent's policy depends on the task (banking's golden_retrieval)."""
        return self.variant is not None and self.variant.policy_per_task

    def policy_for(self, task: Task) -> str:
        """The agent's policy in a simulation of `task`."""
        return self.variant.policy(task) if self._policy_per_task() else self.policy

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

    def infrastructure_record(
        self, task_id: str, trial: int, seed: int, error: str
    ) -> SimulationRecord:
        """A simulation that failed outside this process's attempts (a worker lost, a served
        simulation stopped), after the run's retries."""
        return SimulationRecord.infrastructure_failure(
            task_id, trial, seed, error, self.config.max_retries + 1
        )

    # --- as the local executor --------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Simulations run in this process: nothing to start or stop."""
        yield

    async def simulate(self, task: Task, trial: int, seed: int) -> SimulationRecord:
        """Run, grade and clean up one simulation; retry infrastructure failures."""
        return await with_retries(
            lambda: self.attempt(task, trial, seed), self.config, task, trial, seed
        )

    # --- one attempt ------------------------------------------------------------------------
    async def attempt(self, task: Task, trial: int, seed: int) -> SimulationRecord:
        """One try at the simulation, no retry: any failure propagates."""
        ref = await self.backend.create_episode(self.domain.name, task.id, self.episode_options)
        sessions: list = []
        try:
            orchestrator = await self._orchestrator(task, seed, ref, sessions)
            if self.on_orchestrator is not None:
                self.on_orchestrator(orchestrator)
            conversation = await orchestrator.run(history_messages(task))
            reward_info = await self.grader.grade(
                task, conversation.messages, conversation.termination.value, ref
            )
        finally:
            for session in sessions:
                await session.close()
            await self._forget(ref)
        record = SimulationRecord.finished(
            task_id=task.id,
            trial=trial,
            seed=seed,
            messages=[dump_message(m) for m in conversation.messages],
            termination_reason=conversation.termination.value,
            start_time=conversation.start_time,
            end_time=conversation.end_time,
            duration=conversation.duration,
            reward_info=reward_info,
            info={
                "episode_id": ref.episode_id,
                "steps": conversation.steps,
                "tool_errors": conversation.tool_errors,
                "history_length": conversation.history_length,
            },
            tool_costs=conversation.tool_costs,
        )
        if self._policy_per_task():
            record.policy = self.policy_for(task)
        if self.reviewer is not None:  # after grading, before saving, as the reference does
            await self.reviewer.attach(task, record, self.policy_for(task))
        return record

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
            limits=Limits(self.config.max_steps, self.config.max_errors, self.config.timeout),
            solo=self.solo,
            user_tool_names={t.name for t in user_tools},
            agent_tool_names={t.name for t in agent_tools},
            enforce_protocol=self.config.enforce_protocol,
            greeting=first_agent_message(self.texts, GREETING),
            terminate_tools=frozenset(self.domain.spec.terminate_tools),
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
            policy=self.policy_for(task),
            tools=tools,
            llm=self.config.agent_llm,
            llm_args=dict(self.config.agent_llm_args or {}),
            solo=self.solo,
            seed=seed,
            stop_tool=solo_stop_tool(self.domain) if self.solo else None,
            texts=self.texts,
        )
        try:
            return self.agent_factory(context)
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
            return self.user_factory(context)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
