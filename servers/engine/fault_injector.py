"""One episode's faults: which agent calls fail and how, decided per call by the plan's draws.

Every MCP path runs a call on an episode through `tau_mcp.servers.mcp_calls.call_on_episode`;
when the episode was created with a fault plan, the call goes through `FaultInjector.call`
instead of straight to the engine. Only the agent's tool calls are faulted (the simulated user's
tools are the customer's own device, not a service the agent depends on), and never a `think`
tool or a tool the side does not have. Every agent call counts in the call index, faulted or
not, so the index of a call depends only on the calls before it.

What each kind does (docs/faults.md says it for users):

- permanent: the call fails and the tool stays down: every later call of it fails the same way;
- rate_limit: the call fails, and so do the next `rate_limit_calls` agent calls, whatever tool;
  the first call after that window goes through;
- timeout: waits `timeout_seconds`, then fails; the next call goes through;
- transient: fails at once; the next call goes through;
- stale_read: a read tool answers from the state before the episode's last write (either
  side's), once per write; it counts only when that answer differs from the current one;
- slow: waits `slow_seconds`, then runs the call as usual.

A faulted call that fails never reaches the tool, so a write is never half applied. Calls that
"go through" are not drawn for, which is what makes a retry of a retryable fault succeed.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from tau_mcp.servers.engine.faults import (
    PERMANENT_TEXT,
    PRECEDENCE,
    RATE_LIMIT_LAST_TEXT,
    RATE_LIMIT_TEXT,
    TIMEOUT_TEXT,
    TRANSIENT_TEXT,
    FaultKind,
    FaultPlan,
    draw_slot,
    error_text,
)
from tau_mcp.servers.engine.outcome import ToolOutcome
from tau_mcp.servers.engine.toolkit import Side, ToolKind, Toolkit, ToolSpec


class FaultableEpisode(Protocol):
    """What the injector asks of an episode (`tau_mcp.servers.engine.episode.Episode`)."""

    lock: threading.Lock

    def toolkit(self, side: Side) -> Toolkit | None: ...

    def blocks(self, side: Side, name: str) -> bool: ...

    async def call_async(
        self, side: Side, name: str, arguments: dict[str, Any] | None
    ) -> ToolOutcome: ...

    def frozen_state(self) -> bytes | None: ...

    def call_on_frozen(
        self, frozen: bytes, side: Side, name: str, arguments: dict[str, Any] | None
    ) -> ToolOutcome: ...


class FaultInjector:
    """The faults of one episode: its plan, where it stands, and what it injected so far."""

    def __init__(self, plan: FaultPlan, task_id: str | None) -> None:
        self.plan = plan
        self.task_id = task_id
        self.calls = 0  # agent calls so far: the next call's index
        self.down: set[str] = set()  # tools a permanent fault took down
        self.window_end = -1  # the last call index a rate limit refuses
        self.through = -1  # the call index promised to go through (after a retryable fault)
        self.before_write: bytes | None = None  # the state before the last write, until read
        self.log: list[dict[str, Any]] = []  # every fault injected, in order
        # Per kind drawn, in precedence order: the kind, the draw (as 64 bits) it fires below,
        # where its 8 bytes start in a call's digest, whether it is stale_read (`draw_of`).
        self._kinds = [
            (kind, plan.rate(kind) * 2**64, draw_slot(kind), kind is FaultKind.STALE_READ)
            for kind in PRECEDENCE
            if plan.rate(kind) > 0
        ]
        self._keeps_old_states = plan.rate(FaultKind.STALE_READ) > 0

    async def call(
        self, episode: FaultableEpisode, side: Side, name: str, arguments: dict[str, Any] | None
    ) -> ToolOutcome:
        toolkit = episode.toolkit(side)
        spec = toolkit.spec_of(name) if toolkit is not None else None
        if side != "agent":
            return await self._run(episode, side, name, arguments, spec)
        index = self.calls
        self.calls += 1
        if spec is None or spec.kind == ToolKind.THINK:
            return await self._run(episode, side, name, arguments, spec)
        kind, new = self._choose(episode, side, name, spec, index)
        if kind is None:
            return await self._run(episode, side, name, arguments, spec)
        fault = {"call": index, "tool": name, "kind": kind.value, "new": new}
        if kind is FaultKind.STALE_READ:
            return await self._stale_read(episode, side, name, arguments, fault)
        if kind is FaultKind.SLOW:
            await _sleep(self.plan.slow_seconds)
            outcome = await self._run(episode, side, name, arguments, spec)
            return self._noted(ToolOutcome(outcome.text, outcome.error, outcome.cost, fault))
        if kind is FaultKind.TIMEOUT:
            await _sleep(self.plan.timeout_seconds)
        return self._noted(ToolOutcome(self._message(kind, name, index, new), True, 0.0, fault))

    # --- deciding ---------------------------------------------------------------------------
    def _choose(
        self, episode: FaultableEpisode, side: Side, name: str, spec: ToolSpec, index: int
    ) -> tuple[FaultKind | None, bool]:
        """The fault this call meets (None: none) and whether it was drawn now (True) or
        follows from an earlier one (a tool already down, a rate-limit window)."""
        if name in self.down:
            return FaultKind.PERMANENT, False
        if index <= self.window_end:
            return FaultKind.RATE_LIMIT, False
        if index == self.through:
            return None, False
        digest = self.plan.draws(self.task_id, index)
        for kind, below, start, stale in self._kinds:
            if int.from_bytes(digest[start : start + 8], "big") >= below:
                continue
            if stale and not self._can_read_stale(episode, side, name, spec):
                continue
            return kind, True
        return None, False

    def _can_read_stale(
        self, episode: FaultableEpisode, side: Side, name: str, spec: ToolSpec
    ) -> bool:
        """A read of a tool that answers in-process, with a write since the last stale read."""
        return (
            self.before_write is not None
            and spec.kind == ToolKind.READ
            and not spec.mutates
            and not episode.blocks(side, name)
        )

    def _message(self, kind: FaultKind, name: str, index: int, new: bool) -> str:
        """The failed call's text; moves the episode's fault state along."""
        plan = self.plan
        if kind is FaultKind.PERMANENT:
            self.down.add(name)
            return error_text(PERMANENT_TEXT.format(tool=name))
        if kind is FaultKind.RATE_LIMIT:
            if new:
                self.window_end = index + plan.rate_limit_calls
                self.through = self.window_end + 1
                return error_text(RATE_LIMIT_TEXT.format(calls=plan.rate_limit_calls))
            left = self.window_end - index
            text = RATE_LIMIT_TEXT.format(calls=left) if left else RATE_LIMIT_LAST_TEXT
            return error_text(text)
        self.through = index + 1
        if kind is FaultKind.TIMEOUT:
            return error_text(TIMEOUT_TEXT.format(seconds=plan.timeout_seconds))
        return error_text(TRANSIENT_TEXT)

    # --- running ----------------------------------------------------------------------------
    async def _run(
        self,
        episode: FaultableEpisode,
        side: Side,
        name: str,
        arguments: dict[str, Any] | None,
        spec: ToolSpec | None,
    ) -> ToolOutcome:
        """The call as the engine runs it; before a write, the state is kept for a stale read
        (nothing awaits between keeping it and the call taking the episode's lock)."""
        if self._keeps_old_states and spec is not None and spec.mutates:
            with episode.lock:
                self.before_write = episode.frozen_state()
        return await episode.call_async(side, name, arguments)

    async def _stale_read(
        self,
        episode: FaultableEpisode,
        side: Side,
        name: str,
        arguments: dict[str, Any] | None,
        fault: dict[str, Any],
    ) -> ToolOutcome:
        """The read against the state before the last write. It counts as a fault only when
        that answer differs from the current one; then the old state is used up."""
        current = await episode.call_async(side, name, arguments)
        frozen = self.before_write
        if frozen is None:
            return current
        with episode.lock:
            stale = episode.call_on_frozen(frozen, side, name, arguments)
        if stale.text == current.text:
            return current
        self.before_write = None
        return self._noted(ToolOutcome(stale.text, stale.error, current.cost, fault))

    def _noted(self, outcome: ToolOutcome) -> ToolOutcome:
        assert outcome.fault is not None
        self.log.append(outcome.fault)
        return outcome


async def _sleep(seconds: float) -> None:
    if seconds > 0:
        import anyio

        await anyio.sleep(seconds)
