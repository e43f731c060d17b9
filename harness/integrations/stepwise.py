"""One simulation with an outside policy in one seat, advanced one policy message at a time.

The Gymnasium and verifiers environments need the conversation to pause whenever it is the
policy's turn. Rather than re-implementing the turn rules, the policy sits in the orchestrator
as an ordinary participant (`PolicyAgent` or `PolicyUser`) whose `respond` waits for the next
message from outside. Everything else is `tau-harness run`'s own machinery, unchanged: the
`Runner` creates the episode on the backend (the in-process server, or a remote `tau-server`),
the `Orchestrator` routes messages and applies the stop tokens, step limit and error limit, the
simulated user or agent plays the other side, the `Grader` scores the finished episode, and
the runner's cleanup deletes it.
"""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from tau_mcp.conversation.llm import DEFAULT_LLM
from tau_mcp.conversation.messages import STOP, ChatMessage, Message, is_agent_stop, parse_message
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming
from tau_mcp.harness.agents.base import _agent_can_see as agent_can_see
from tau_mcp.harness.agents.llm_agent import DONE_TOOL
from tau_mcp.harness.backends import EpisodeBackend, EpisodeOptions, EpisodeRef, ToolInfo
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import build_judge, open_backend, shared_domain
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.base import _user_can_see as user_can_see
from tau_mcp.simulator.scenario import scenario_text

Seat = Literal["agent", "user"]
AGENT_PARTNERS = ("llm", "scripted")  # who plays the user when the policy is the agent
USER_PARTNERS = ("llm", "oracle")  # who plays the agent when the policy is the user

DONE_SCHEMA = ToolInfo(
    DONE_TOOL, "Call this when the conversation is over; it ends the episode.", {}
).openai_schema()


@dataclass
class EpisodeSettings:
    """What a step-wise environment is built with (the keyword arguments of `Agent-v0` and
    `User-v0`, and of the verifiers environment)."""

    domain: str
    task_id: str | None = None  # None: each episode draws a task from `task_split`
    task_split: str | None = "base"
    user: str = "llm"
    user_llm: str | None = DEFAULT_LLM
    user_llm_args: dict[str, Any] = field(default_factory=dict)
    agent: str = "llm"
    agent_llm: str | None = DEFAULT_LLM
    agent_llm_args: dict[str, Any] = field(default_factory=dict)
    solo_mode: bool = False
    judge_llm: str | None = None
    judge_llm_args: dict[str, Any] = field(default_factory=dict)
    data_dir: str | Path | None = None
    server: str | None = None
    server_token: str | None = None
    max_steps: int = DEFAULT_MAX_STEPS
    max_errors: int = DEFAULT_MAX_ERRORS
    # banking_knowledge: the retrieval config of every episode (and its kwargs).
    retrieval_config: str | None = None
    retrieval_kwargs: dict[str, Any] | None = None

    def check(self, seat: Seat) -> None:
        """One clear sentence for a setting that cannot work, before anything is loaded."""
        if seat == "agent":
            if self.solo_mode:
                return
            if self.user not in AGENT_PARTNERS:
                raise ConfigError(
                    f"user must be one of {', '.join(AGENT_PARTNERS)}, not {self.user!r}"
                )
            if self.user == "llm" and not self.user_llm:
                raise ConfigError("the llm user needs a model: pass user_llm")
        else:
            if self.solo_mode:
                raise ConfigError("solo mode has no user to play; use Agent-v0")
            if self.agent not in USER_PARTNERS:
                raise ConfigError(
                    f"agent must be one of {', '.join(USER_PARTNERS)}, not {self.agent!r}"
                )
            if self.agent == "llm" and not self.agent_llm:
                raise ConfigError("the llm agent needs a model: pass agent_llm")
        for name in ("max_steps", "max_errors"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1")


# --- the backend ------------------------------------------------------------------------------
class BackendKeeper:
    """Opens and later closes a backend inside one task of its own.

    The in-process server's lifespan sets context variables that must be reset in the context
    that set them, but a gym env or a verifiers rollout opens and closes from different tasks.
    """

    def __init__(self) -> None:
        self.backend: EpisodeBackend | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def open(self, domain: Domain, settings: EpisodeSettings) -> EpisodeBackend:
        ready: asyncio.Future[EpisodeBackend] = asyncio.get_running_loop().create_future()

        async def keep() -> None:
            try:
                backend = await open_backend(domain, settings.server, settings.server_token)
            except BaseException as exc:
                ready.set_exception(exc)
                return
            ready.set_result(backend)
            try:
                await self._stop.wait()
            finally:
                await backend.close()

        self._task = asyncio.ensure_future(keep())
        self.backend = await ready
        return self.backend

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)


class EpisodeTracking:
    """The backend as the runner sees it, noting the episode it last created (so the policy's
    info can name it while the episode is still running)."""

    def __init__(self, backend: EpisodeBackend) -> None:
        self._backend = backend
        self.current: EpisodeRef | None = None

    async def create_episode(
        self, domain: str, task_id: str | None, options: EpisodeOptions | None = None
    ) -> EpisodeRef:
        self.current = await self._backend.create_episode(domain, task_id, options)
        return self.current

    def __getattr__(self, name: str) -> Any:
        return getattr(self._backend, name)


# --- the seat ---------------------------------------------------------------------------------
class PolicySeat:
    """Where the orchestrator waits for the outside policy's next message."""

    def __init__(self) -> None:
        self.participant: PolicyAgent | PolicyUser | None = None
        self._pending: asyncio.Future[ChatMessage] | None = None
        self._turn = asyncio.Event()

    async def next_message(self) -> ChatMessage:
        """Called by the seated participant: block until the policy has spoken."""
        future: asyncio.Future[ChatMessage] = asyncio.get_running_loop().create_future()
        self._pending = future
        self._turn.set()
        return await future

    @property
    def waiting(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def submit(self, message: ChatMessage) -> None:
        if not self.waiting:
            raise RuntimeError("it is not the policy's turn")
        future, self._pending = self._pending, None
        self._turn.clear()
        assert future is not None
        future.set_result(message)

    async def turn_or_end(self, run: asyncio.Task) -> None:
        """Return once it is the policy's turn again or the simulation is over."""
        if self._turn.is_set() or run.done():
            return
        waiter = asyncio.ensure_future(self._turn.wait())
        try:
            await asyncio.wait({waiter, run}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()

    def clear(self) -> None:
        if self._pending is not None and not self._pending.done():
            self._pending.cancel()
        self._pending = None
        self._turn.clear()
        self.participant = None


def done_as_stop(message: ChatMessage) -> ChatMessage:
    """A call of the `done` tool ends the conversation, as in the reference's gym agent."""
    if message.tool_calls and any(call.name == DONE_TOOL for call in message.tool_calls):
        return message.model_copy(update={"content": STOP, "tool_calls": None})
    return message


class PolicyAgent(Agent):
    """The agent's seat, taken by the outside policy (bound to one `PolicySeat` per env)."""

    implementation = "policy"
    seat: ClassVar[PolicySeat]

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        self.seat.participant = self

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        reply = done_as_stop(await self.seat.next_message())
        self.history.append(reply)
        return reply

    def is_stop(self, message: ChatMessage) -> bool:
        return is_agent_stop(message)


class PolicyUser(UserSimulator):
    """The user's seat, taken by the outside policy; it ends the call with a stop token."""

    implementation = "policy"
    seat: ClassVar[PolicySeat]

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        self.seat.participant = self

    async def respond(self, incoming) -> ChatMessage:
        self.record(incoming)
        reply = await self.seat.next_message()
        self.history.append(reply)
        return reply


def _bound(cls: type, seat: PolicySeat, **attributes: Any) -> type:
    return type(cls.__name__, (cls,), {"seat": seat, **attributes})


# --- one environment's simulations ------------------------------------------------------------
class PolicyDriver:
    """What a step-wise environment keeps between episodes: the domain, one backend, one
    runner (with its grader and its cache of gold states) and the policy's seat."""

    def __init__(
        self, settings: EpisodeSettings, seat: Seat, domain: Domain, backend: EpisodeBackend
    ) -> None:
        self.settings, self.side, self.domain = settings, seat, domain
        self.backend = EpisodeTracking(backend)
        self.seat = PolicySeat()
        judge = build_judge(
            settings.judge_llm or "none", {"temperature": 0.0, **settings.judge_llm_args}
        )
        config = RunConfig(
            domain=domain.name,
            agent_llm=settings.agent_llm,
            agent_llm_args=dict(settings.agent_llm_args),
            user_llm=settings.user_llm,
            user_llm_args=dict(settings.user_llm_args),
            max_steps=settings.max_steps,
            max_errors=settings.max_errors,
            max_retries=0,  # a failed episode ends with infrastructure_error, never a re-run
            judge=judge,
            retrieval_config=settings.retrieval_config,
            retrieval_kwargs=settings.retrieval_kwargs,
        )
        if seat == "agent":
            solo = settings.solo_mode
            if solo and not domain.supports_solo:
                raise ConfigError(f"the {domain.name} domain has no solo mode")
            config.agent, config.user = "policy", ("dummy" if solo else settings.user)
            policy = _bound(PolicyAgent, self.seat, solo=solo)
            self.runner = SimulationRunner(self.backend, domain, config, agent_factory=policy)
        else:
            config.agent, config.user = settings.agent, "policy"
            policy = _bound(PolicyUser, self.seat)
            self.runner = SimulationRunner(self.backend, domain, config, user_factory=policy)
        self.requestor = "assistant" if seat == "agent" else "user"
        self.task: Task | None = None
        self.run: asyncio.Task | None = None
        self.result: dict[str, Any] | None = None
        self.task_ids = self._task_ids()
        self._keeper: BackendKeeper | None = None

    @classmethod
    async def open(cls, settings: EpisodeSettings, seat: Seat) -> PolicyDriver:
        settings.check(seat)
        try:
            domain = shared_domain(settings.domain, settings.data_dir)
        except EngineError as exc:
            raise ConfigError(str(exc)) from None
        keeper = BackendKeeper()
        backend = await keeper.open(domain, settings)
        try:
            driver = cls(settings, seat, domain, backend)
        except BaseException:
            await keeper.close()
            raise
        driver._keeper = keeper
        return driver

    def _task_ids(self) -> list[str]:
        if self.settings.task_id is not None:
            self.load_task(self.settings.task_id)
            return [self.settings.task_id]
        try:
            return self.domain.task_ids(self.settings.task_split)
        except EngineError as exc:
            raise ConfigError(str(exc)) from None

    def load_task(self, task_id: str) -> Task:
        if task_id not in self.domain.tasks:
            raise ConfigError(f"unknown task id '{task_id}' in domain '{self.domain.name}'")
        task = self.domain.task(task_id)
        if self.side == "agent" and self.settings.solo_mode and not task.ticket:
            raise ConfigError(f"task '{task_id}' has no ticket, so it cannot run solo")
        return task

    # --- an episode -------------------------------------------------------------------------
    async def begin(self, task: Task, seed: int) -> None:
        """Start a fresh episode and run it up to the policy's first turn (or its end)."""
        await self.abandon()
        self.seat.clear()
        self.task, self.result = task, None
        self.backend.current = None
        self.run = asyncio.ensure_future(self.runner.simulate(task, 0, seed))
        await self._advance()

    async def act(self, message: ChatMessage) -> None:
        """The policy's message; returns at its next turn or when the episode is over."""
        if self.run is None or self.finished:
            raise RuntimeError("the episode is over; reset for a new one")
        self.seat.submit(message)
        await self._advance()

    async def _advance(self) -> None:
        assert self.run is not None
        await self.seat.turn_or_end(self.run)
        if self.run.done():
            # configuration errors surface here; the record is kept as its users see it
            self.result = self.run.result().layout()

    @property
    def started(self) -> bool:
        return self.run is not None

    @property
    def finished(self) -> bool:
        return self.result is not None

    async def abandon(self) -> None:
        """Stop an unfinished episode; the runner's cleanup deletes it from the server."""
        run, self.run = self.run, None
        if run is not None and not run.done():
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)

    async def close(self) -> None:
        try:
            await self.abandon()
        finally:
            self.seat.clear()
            if self._keeper is not None:  # a backend this driver opened (else it is shared)
                await self._keeper.close()

    # --- what the policy is shown -----------------------------------------------------------
    def messages(self) -> list[Message]:
        """The conversation as the policy's side sees it (once over, the whole trajectory
        through that side's eyes, so the closing message shows)."""
        if self.result is not None and self.result.get("messages"):
            visible = agent_can_see if self.side == "agent" else user_can_see
            return [m for m in map(parse_message, self.result["messages"]) if visible(m)]
        participant = self.seat.participant
        return list(participant.history) if participant is not None else []

    @property
    def reward(self) -> float:
        info = (self.result or {}).get("reward_info") or {}
        return float(info.get("reward") or 0.0)

    @property
    def termination(self) -> str | None:
        return (self.result or {}).get("termination_reason")

    def tool_schemas(self) -> list[dict[str, Any]]:
        participant = self.seat.participant
        tools = participant.context.tools if participant is not None else []
        schemas = [t.openai_schema() for t in tools]
        if self.side == "agent" and participant is not None:
            # Solo: the finishing tool as the reference declares it, when the data has it.
            stop = participant.context.stop_tool
            schemas.append(stop.openai_schema() if stop is not None else copy.deepcopy(DONE_SCHEMA))
        return schemas

    def info(self) -> dict[str, Any]:
        """Fresh every call (callers keep what they are given)."""
        episode = self.backend.current
        info: dict[str, Any] = {
            "task_id": self.task.id if self.task else None,
            "episode_id": episode.episode_id if episode is not None else None,
            "tools": self.tool_schemas(),
            "policy": self.runner.policy_for(self.task) if self.task else self.runner.policy,
        }
        if self.task is not None:
            if self.side == "user":
                info["scenario"] = scenario_text(self.task.user_scenario)
            elif self.settings.solo_mode:
                info["ticket"] = self.task.ticket
        if self.result is not None:
            info["termination_reason"] = self.termination
            info["reward_info"] = copy.deepcopy(self.result.get("reward_info"))
            info["simulation"] = copy.deepcopy(self.result)
        return info
