"""`tau-mcp/Agent-v0` and `tau-mcp/User-v0`: tau2 episodes as Gymnasium environments.

The Gym API is synchronous; the harness is async. Each environment therefore owns a private
event loop on its own thread, and `reset`/`step` hand coroutines to it and wait. The episode
logic itself is `tau_mcp.harness.integrations.stepwise` (the orchestrator, simulators and grader of
`tau-harness run`, the policy in the one outside seat). An environment's keyword arguments
beyond its own (`task_id`, `solo_mode`, `all_messages_as_observation`, `render_mode`) are
`RunConfig` fields (`task_set_name`, `task_split`, `user_llm`, `server`, `max_steps`, ...).
"""

from __future__ import annotations

import asyncio
import atexit
import sys
import threading
import weakref
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.integrations.actions import ActionError, observation_text, parse_action
from tau_mcp.harness.integrations.stepwise import PolicyDriver, stepwise_config
from tau_mcp.harness.orchestrator import Termination
from tau_mcp.harness.seat import DONE_TOOL, Side
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.surfaces import ShownTool, View, from_openai, register_surface

T = TypeVar("T")
CLOSE_TIMEOUT = 30.0  # seconds for closing: an unreachable server must not hang the caller


class LoopThread:
    """A private event loop running on a daemon thread."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:  # e.g. a destructor run by the loop
            coroutine.close()
            raise RuntimeError("cannot wait for the env's loop from its own thread")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        return future.result(timeout)

    def stop(self) -> None:
        if self.loop.is_closed():
            return

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_asyncgens()

        try:
            self.call(drain(), timeout=CLOSE_TIMEOUT)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            if not self._thread.is_alive():
                self.loop.close()


class TextSpace(gym.spaces.Space[str]):
    """Any string (observations are conversation text of unbounded length)."""

    def __init__(self, seed: int | np.random.Generator | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return isinstance(x, str)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        words = ("hello", "thanks", "please", "help", "order", "account", "yes", "no")
        count = int(self.np_random.integers(1, 8))
        return " ".join(str(self.np_random.choice(words)) for _ in range(count))

    def __repr__(self) -> str:
        return "TextSpace()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TextSpace)


class MessageSpace(TextSpace):
    """A policy's action: text, a JSON or function-style tool call, or an OpenAI message dict.

    `sample()` draws a call of one of the side's tools with no arguments (or, with no tools, a
    short text): it is for smoke tests, and never ends an episode by itself."""

    def __init__(self, tool_names: list[str], seed: Any = None) -> None:
        super().__init__(seed=seed)
        self.tool_names = sorted(tool_names)

    def contains(self, x: Any) -> bool:
        return isinstance(x, (str, dict))

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if not self.tool_names:
            return super().sample()
        return f"{self.tool_names[int(self.np_random.integers(len(self.tool_names)))]}()"

    def __repr__(self) -> str:
        return f"MessageSpace({len(self.tool_names)} tools)"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, MessageSpace) and other.tool_names == self.tool_names


class _TauEnv(gym.Env[str, Any]):
    """Shared by both seats: one driver (episode machinery) on one private loop."""

    metadata = {"render_modes": ["ansi"], "render_fps": 1}
    seat: Side

    def __init__(self, config: RunConfig, render_mode: str | None, all_messages: bool) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.all_messages = all_messages
        self.config = config
        self._loop: LoopThread | None = LoopThread(f"tau-mcp-{self.seat}-env")
        try:
            self._driver: PolicyDriver | None = self._loop.call(
                PolicyDriver.open(config, self.seat)
            )
        except BaseException:
            self._loop.stop()
            self._loop = None
            raise
        _open_envs.add(self)
        self.observation_space = TextSpace()
        self.action_space = MessageSpace(self._tool_names())
        # Function-style text naming none of these is just text (`Sure (happy to help)`).
        self._known_tools = set(self.action_space.tool_names) | (
            {DONE_TOOL} if self.seat == "agent" else set()
        )
        self._last_error: str | None = None

    def _tool_names(self) -> list[str]:
        spec = self._driver.domain.spec  # type: ignore[union-attr]
        if self.seat == "user":
            return list(spec.user_tools.specs) if spec.user_tools is not None else []
        names = list(spec.agent_tools.specs)
        if self.driver.solo and spec.user_tools is not None:
            names += list(spec.user_tools.specs)
        return names

    @property
    def driver(self) -> PolicyDriver:
        if self._driver is None:
            raise gym.error.ClosedEnvironmentError("the environment is closed")
        return self._driver

    # --- Gym API ----------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """A fresh episode; `options={"task_id": ...}` picks its task (else the env's task, or
        a task drawn from the split with the env's seeded generator)."""
        super().reset(seed=seed)
        driver = self.driver
        task_id = (options or {}).get("task_id")
        if task_id is None:
            ids = driver.task_ids
            task_id = ids[0] if len(ids) == 1 else ids[int(self.np_random.integers(len(ids)))]
        task = driver.load_task(task_id)
        simulation_seed = int(self.np_random.integers(0, 1_000_000))
        self._last_error = None
        assert self._loop is not None
        self._loop.call(driver.begin(task, simulation_seed))
        return self._observation(), driver.info()

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        driver = self.driver
        if not driver.started:
            raise gym.error.ResetNeeded("call reset() before step()")
        if driver.finished:
            return "", 0.0, not self._truncated(), self._truncated(), driver.info()
        try:
            message = parse_action(action, driver.requestor, self._known_tools)  # type: ignore[arg-type]
        except ActionError as exc:
            info = driver.info()
            info["invalid_action"] = str(exc)
            return f"Invalid action: {exc}", 0.0, False, False, info
        assert self._loop is not None
        self._loop.call(driver.act(message))
        finished = driver.finished
        truncated = finished and self._truncated()
        reward = driver.reward if finished else 0.0
        return self._observation(), reward, finished and not truncated, truncated, driver.info()

    def _truncated(self) -> bool:
        return self.driver.termination == Termination.MAX_STEPS.value

    def _observation(self) -> str:
        own_role = "assistant" if self.seat == "agent" else "user"
        return observation_text(self.driver.messages(), own_role, self.all_messages)

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._driver is None:
            return None
        own_role = "assistant" if self.seat == "agent" else "user"
        return observation_text(self._driver.messages(), own_role, full=True)

    def close(self) -> None:
        """End any unfinished episode (deleting it on the server) and stop the loop."""
        loop, driver = self._loop, self._driver
        self._loop = self._driver = None
        if loop is None:
            return
        _open_envs.discard(self)
        try:
            if driver is not None:
                loop.call(driver.close(), timeout=CLOSE_TIMEOUT)
        finally:
            loop.stop()

    def __del__(self) -> None:  # pragma: no cover - best effort when close() was forgotten
        if sys.is_finalizing():  # the loop's thread is gone by now; nothing can be awaited
            return
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass


_open_envs: weakref.WeakSet[_TauEnv] = weakref.WeakSet()


@atexit.register
def _close_open_envs() -> None:
    """Envs never closed are closed at exit, while their loop threads still run (so their
    unfinished episodes are deleted and the process does not hang in a destructor)."""
    for env in list(_open_envs):
        try:
            env.close()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass


class AgentEnv(_TauEnv):
    """The policy plays the customer-service agent against a simulated user.

    Actions: text to the user, a tool call (`{"name", "arguments"}` JSON or `name(a='x')`),
    or an OpenAI assistant message dict; `done()` (or `###STOP###`) ends the conversation.
    """

    seat: Side = "agent"

    def __init__(
        self,
        domain: str,
        task_id: str | None = None,
        *,
        solo_mode: bool = False,
        all_messages_as_observation: bool = False,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        """`task_id`: every episode's task (else `reset` draws one from the tasks the options
        select: `task_split`, `task_ids`, `task_set_name`...); `solo_mode`: the reference's
        solo mode (a ticket, both sides' tools, no user); `options`: `RunConfig` fields."""
        if task_id is not None:
            options["task_ids"] = [task_id]
        if solo_mode:
            options["user"] = "dummy"
        config = stepwise_config("agent", "Agent-v0", {"domain": domain, **options})
        super().__init__(config, render_mode, all_messages_as_observation)


class UserEnv(_TauEnv):
    """The policy plays the customer against the `llm` or `oracle` agent.

    Actions: text to the agent, a call of the user's own tools, or an OpenAI message dict;
    a message containing `###STOP###` (or `###TRANSFER###`, `###OUT-OF-SCOPE###`) ends it.
    """

    seat: Side = "user"

    def __init__(
        self,
        domain: str,
        task_id: str | None = None,
        *,
        all_messages_as_observation: bool = False,
        render_mode: str | None = None,
        **options: Any,
    ) -> None:
        """`task_id`: every episode's task (else `reset` draws one from the tasks the options
        select); `options`: `RunConfig` fields (`agent`: llm or oracle, `agent_llm`...)."""
        if task_id is not None:
            options["task_ids"] = [task_id]
        config = stepwise_config("user", "User-v0", {"domain": domain, **options})
        super().__init__(config, render_mode, all_messages_as_observation)


def _tools_in_info(domain: Domain, view: View, variant: str | None) -> list[ShownTool] | None:
    from tau_mcp.harness.surface_probes import probe_task

    if view == "solo" and not domain.supports_solo:
        return None
    task = probe_task(domain, solo=view == "solo")
    if view == "user":
        env: _TauEnv = UserEnv(
            domain.name,
            task.id,
            agent="oracle",
            data_dir=domain.data_dir,
            retrieval_config=variant,
        )
    else:
        env = AgentEnv(
            domain.name,
            task.id,
            user="scripted",
            solo_mode=view == "solo",
            data_dir=domain.data_dir,
            retrieval_config=variant,
        )
    try:
        _, info = env.reset()
        return from_openai(info["tools"])
    finally:
        env.close()


async def _shown_in_info(domain: Domain, view: View, variant: str | None) -> list[ShownTool] | None:
    """`info["tools"]` after `reset()`, read on a thread (each env runs its own event loop)."""
    return await asyncio.to_thread(_tools_in_info, domain, view, variant)


#: `info["tools"]` of Agent-v0 (the agent seat adds the `done` tool of its own unless solo,
#: where the reference's finishing tool is part of the listing) and of User-v0 (the task's
#: `user_tools`, as the reference narrows the user's tools).
GYM_AGENT = register_surface(
    "Gymnasium Agent-v0 info", ("agent", "solo"), _shown_in_info, extra_tools=(DONE_TOOL,)
)
GYM_USER = register_surface(
    "Gymnasium User-v0 info", ("user",), _shown_in_info, narrows_user_tools=True
)
