"""One simulation with an outside policy in one seat, advanced one policy message at a time.

The Gymnasium and verifiers environments need the conversation to pause whenever it is the
policy's turn. Rather than re-implementing the turn rules, the policy takes the seat of
`tau_mcp.harness.seat` (the one every outside participant takes, with its one rule for how the
outside side ends the conversation): `PolicyDriver` moves on the seat and reads what came back.
Everything else is `tau-harness run`'s own machinery, unchanged: the `SimulationRunner` creates
the episode on the backend (the in-process server, or a remote `tau-server`), the
`Orchestrator` routes messages and applies the stop tokens, step limit and error limit, the
simulated user or agent plays the other side, the `Grader` scores the finished episode, and the
runner's cleanup deletes it.

An environment's keyword arguments are a `RunConfig`'s (`stepwise_config`): every run option
that applies to one episode at a time reaches the environments, spelled and checked as
everywhere else.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from tau_mcp.conversation.messages import ChatMessage, Message, parse_message
from tau_mcp.harness.agents.base import _agent_can_see as agent_can_see
from tau_mcp.harness.backends import EpisodeBackend, EpisodeOptions, EpisodeRef, ToolInfo
from tau_mcp.harness.config import RunConfig, select_tasks
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.seat import DONE_TOOL, OutsideAgent, OutsideSoloAgent, OutsideUser, Seat, Side
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import open_backend, shared_domain
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.simulator.base import _user_can_see as user_can_see
from tau_mcp.simulator.scenario import scenario_text

AGENT_PARTNERS = ("llm", "scripted")  # who plays the user when the policy is the agent
USER_PARTNERS = ("llm", "oracle")  # who plays the agent when the policy is the user

DONE_SCHEMA = ToolInfo(
    DONE_TOOL, "Call this when the conversation is over; it ends the episode.", {}
).openai_schema()

#: Run options a step-wise environment has no use for: it runs one episode at a time, in this
#: process, once (a failed episode ends with infrastructure_error, never a re-run), seeded by
#: its own `reset(seed=...)`, and writes no results file.
NOT_STEPWISE = frozenset(
    {
        "num_trials",
        "max_concurrency",
        "seed",
        "workers",
        "ray",
        "provider_limits",
        "agent_cmd",
        "max_retries",
        "retry_delay",
        "save_to",
        "review",
        "preset",
    }
)
#: What the policy's own seat makes meaningless.
SEAT_OPTIONS = {
    "agent": frozenset({"agent", "agent_llm", "agent_llm_args"}),
    "user": frozenset({"user", "user_llm", "user_llm_args"}),
}
#: Where the step-wise surfaces' defaults differ from a run's: NL assertions are judged only
#: when asked for (`judge_llm`), so an episode's reward needs no judge model or key.
STEPWISE_DEFAULTS: dict[str, Any] = {"judge_llm": "none"}


def stepwise_config(side: Side, surface: str, options: dict[str, Any]) -> RunConfig:
    """The run an environment's episodes are, from its keyword arguments (`RunConfig` fields);
    one clear sentence for one it cannot use or a partner that cannot play opposite the
    policy."""
    refused = sorted(k for k in options if k in NOT_STEPWISE or k in SEAT_OPTIONS[side])
    if refused:
        why = (
            "the policy plays that side"
            if refused[0] in SEAT_OPTIONS[side]
            else ("it runs one episode at a time, once, in this process")
        )
        raise ConfigError(f"{surface} does not take {refused[0]} ({why})")
    config = RunConfig(**{**STEPWISE_DEFAULTS, **options, "max_retries": 0})
    if side == "agent":
        if config.user != "dummy" and config.user not in AGENT_PARTNERS:
            raise ConfigError(
                f"user must be one of {', '.join(AGENT_PARTNERS)}, not {config.user!r}"
            )
        return config.replace(agent="policy")
    if config.user == "dummy":
        raise ConfigError("solo mode has no user to play; use Agent-v0")
    if config.agent not in USER_PARTNERS:
        raise ConfigError(f"agent must be one of {', '.join(USER_PARTNERS)}, not {config.agent!r}")
    return config.replace(user="policy")


def run_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Keyword arguments split into `RunConfig` fields and the rest (a framework's own)."""
    fields = RunConfig.model_fields
    return (
        {k: v for k, v in options.items() if k in fields},
        {k: v for k, v in options.items() if k not in fields},
    )


def load_config_domain(config: RunConfig) -> Domain:
    """The config's domain (bound to its task set), warm and shared by every environment of
    the process; an unknown domain, set or retrieval config is one sentence."""
    try:
        domain = shared_domain(
            config.domain, config.data_dir, config.task_set_name, config.domain_paths
        )
        domain.resolve_variant(config.retrieval_config, config.retrieval_kwargs)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    return domain


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

    async def open(self, domain: Domain, config: RunConfig) -> EpisodeBackend:
        ready: asyncio.Future[EpisodeBackend] = asyncio.get_running_loop().create_future()

        async def keep() -> None:
            try:
                backend = await open_backend(domain, config.server, config.server_token)
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


# --- one environment's simulations ------------------------------------------------------------
class PolicyDriver:
    """What a step-wise environment keeps between episodes: the domain, one backend, one
    runner (with its grader and its cache of gold states); each episode has its seat."""

    def __init__(self, config: RunConfig, side: Side, domain: Domain, backend: EpisodeBackend):
        self.config, self.side, self.domain = config, side, domain
        self.backend = EpisodeTracking(backend)
        self.solo = side == "agent" and config.user == "dummy"
        if side == "agent":
            if self.solo and not domain.supports_solo:
                raise ConfigError(f"the {domain.name} domain has no solo mode")
            seated = OutsideSoloAgent if self.solo else OutsideAgent
            self.runner = SimulationRunner(self.backend, domain, config, agent_factory=seated)
        else:
            self.runner = SimulationRunner(self.backend, domain, config, user_factory=OutsideUser)
        self.requestor = "assistant" if side == "agent" else "user"
        self.seat = Seat(side)
        self.task: Task | None = None
        self.run: asyncio.Task | None = None
        self.result: dict[str, Any] | None = None
        self.task_ids = self._task_ids()
        self._keeper: BackendKeeper | None = None

    @classmethod
    async def open(cls, config: RunConfig, side: Side) -> PolicyDriver:
        domain = load_config_domain(config)
        keeper = BackendKeeper()
        backend = await keeper.open(domain, config)
        try:
            driver = cls(config, side, domain, backend)
        except BaseException:
            await keeper.close()
            raise
        driver._keeper = keeper
        return driver

    def _task_ids(self) -> list[str]:
        ids = [t.id for t in select_tasks(self.domain, self.config)]
        for task_id in ids if self.config.task_ids else ():
            self.load_task(task_id)
        return ids

    def load_task(self, task_id: str) -> Task:
        if task_id not in self.domain.tasks:
            raise ConfigError(f"unknown task id '{task_id}' in domain '{self.domain.name}'")
        task = self.domain.task(task_id)
        if self.solo and not task.ticket:
            raise ConfigError(f"task '{task_id}' has no ticket, so it cannot run solo")
        return task

    # --- an episode -------------------------------------------------------------------------
    async def begin(self, task: Task, seed: int) -> None:
        """Start a fresh episode and run it up to the policy's first turn (or its end)."""
        await self.abandon()
        self.seat = Seat(self.side)
        self.task, self.result = task, None
        self.backend.current = None
        self.run = asyncio.ensure_future(self._simulate(self.seat, task, seed))
        await self.seat.turn()
        await self._settle()

    async def _simulate(self, seat: Seat, task: Task, seed: int) -> dict[str, Any]:
        try:
            return await seat.host(self.runner.simulate(task, 0, seed))
        finally:
            seat.close()

    async def act(self, message: ChatMessage) -> None:
        """The policy's message; returns at its next turn or when the episode is over."""
        if self.run is None or self.finished:
            raise RuntimeError("the episode is over; reset for a new one")
        await self.seat.move(message)
        await self._settle()

    async def _settle(self) -> None:
        assert self.run is not None
        if self.seat.closed:
            # configuration errors surface here; the record is kept as its users see it
            self.result = (await self.run).layout()

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
            elif self.solo:
                info["ticket"] = self.task.ticket
        if self.result is not None:
            info["termination_reason"] = self.termination
            info["reward_info"] = copy.deepcopy(self.result.get("reward_info"))
            info["simulation"] = copy.deepcopy(self.result)
        return info
