"""One seat for a participant that is not ours: the rendezvous between the orchestrator and an
outside policy (a Gymnasium or verifiers policy, the Inspect model under evaluation, an MCP
client of `tau-harness serve` or `run --agent cmd`).

The outside policy sits in the orchestrator as an ordinary participant (`OutsideAgent`,
`OutsideSoloAgent` or `OutsideUser`) whose turn waits for the policy's next message. Everything
else is `tau-harness run`'s own machinery: the orchestrator's turn rules, limits and endings,
the simulated other side, the grader. The policy pushes its messages (`Seat.move`), one at a
time in the order they were made, and each move returns what the orchestrator hands its side
next (the tool results, the other side's reply), or the end of the conversation.

How the outside side ends the conversation is one rule, the same on every surface (the rule of
the reference's own seat for an outside policy, its gym agent and gym user; docs/seat.md):

- the agent side ends it (termination `agent_stop`) with a message whose text contains
  `###STOP###`, or by calling the `done` tool (the call is recorded as that stop message, as
  the reference's gym agent records it); leaving (`Seat.end`: `POST /simulations/{id}/end`, an
  agent program that exits or runs out of time) is that same stop message;
- the user side ends it (termination `user_stop`) with a text message containing `###STOP###`,
  `###TRANSFER###` or `###OUT-OF-SCOPE###` (the simulated user's own rule); leaving is
  `###STOP###`;
- anything else goes on: the other side's stop, the step limit, the error limit and the time
  limit end it as in any run. Abandoning a conversation (a Gymnasium reset, a verifiers
  cleanup, a served simulation nobody plays) is not ending it: it is never graded.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from tau_mcp.conversation.messages import STOP, ChatMessage, Message, is_agent_stop
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming
from tau_mcp.harness.agents.llm_agent import DONE_TOOL
from tau_mcp.simulator.base import UserContext, UserSimulator

__all__ = [
    "DONE_TOOL",
    "OutsideAgent",
    "OutsideSoloAgent",
    "OutsideUser",
    "Reply",
    "Seat",
    "Side",
    "current_seat",
    "outside_message",
]

Side = Literal["agent", "user"]
T = TypeVar("T")


def outside_message(side: Side, message: ChatMessage) -> ChatMessage:
    """The outside side's message as the conversation records it: on the agent side a call of
    `done` is the stop message (its other calls dropped, as the reference's gym agent drops
    them). Whether a message ends the conversation is then the orchestrator's usual check."""
    if (
        side == "agent"
        and message.tool_calls
        and any(c.name == DONE_TOOL for c in message.tool_calls)
    ):
        return message.model_copy(update={"content": STOP, "tool_calls": None})
    return message


@dataclass(frozen=True)
class Reply:
    """What one move gets back. `incoming`: what the orchestrator handed the seat since the
    policy's previous move, in order (the last item answers this move; earlier ones arrived
    before the policy's first move). `earlier`: with the first reply only, the conversation
    from before the seat's first turn as its side saw it (a task that starts mid-conversation).
    `ended`: the conversation is over; `final` is what the seat's owner closed it with (for the
    move in flight) or gives every later move."""

    incoming: tuple[Incoming, ...] = ()
    earlier: tuple[Message, ...] = ()
    ended: bool = False
    final: Any = None


@dataclass
class _Move:
    message: ChatMessage | Exception  # an exception: the policy failed to make its move
    answer: asyncio.Future[Reply] = field(repr=False)


class Seat:
    """One conversation's seat for an outside policy on `side`. `opens`: the policy writes the
    agent's opening message (an MCP client's first call opens the conversation); otherwise the
    conversation opens with the reference's greeting, as for our own agents."""

    def __init__(self, side: Side = "agent", *, opens: bool = False) -> None:
        self.side, self.opens = side, opens
        self.participant: OutsideAgent | OutsideUser | None = None
        self.moves = 0  # moves made
        self.last_activity = time.monotonic()  # the last move made or answered
        self._queue: asyncio.Queue[_Move] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._pending: _Move | None = None
        self._unanswered: list[Incoming] = []
        self._earlier: tuple[Message, ...] = ()
        self._waiting = asyncio.Event()
        self._closed = asyncio.Event()
        self._final: Any = None
        self._after: Any = None

    # --- state ------------------------------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def waiting(self) -> bool:
        """The orchestrator waits for the policy's next message."""
        return self._waiting.is_set() and self._queue.empty()

    @property
    def busy(self) -> bool:
        """A move waits for its answer (the orchestrator, not the policy, has the next step)."""
        return self._pending is not None or not self._queue.empty()

    # --- the policy's side ------------------------------------------------------------------
    async def move(self, message: ChatMessage | Exception) -> Reply:
        """Make one move and wait for what it gets back (moves made at once are played one
        at a time, in the order they were made). An exception is a policy that failed to
        move: the seated participant raises it at its turn, so the simulation fails as it
        would for any participant (retried, or recorded as an infrastructure error)."""
        async with self._lock:
            if self.closed:
                return Reply(ended=True, final=self._after)
            move = _Move(message, asyncio.get_running_loop().create_future())
            self.moves += 1
            self.last_activity = time.monotonic()
            self._queue.put_nowait(move)
            try:
                return await move.answer
            finally:
                self.last_activity = time.monotonic()

    async def end(self) -> Reply:
        """Leave: end the conversation from this side (the stop message of the rule above)."""
        role = "assistant" if self.side == "agent" else "user"
        return await self.move(ChatMessage(role=role, content=STOP))

    async def turn(self) -> None:
        """Return once it is the policy's turn (the orchestrator waits for its message) or the
        conversation is over."""
        waiters = [asyncio.ensure_future(e.wait()) for e in (self._waiting, self._closed)]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    async def host(self, simulation: Awaitable[T]) -> T:
        """Run `simulation` (a `SimulationRunner.simulate`/`attempt` coroutine) with this seat
        as the one its outside participant takes. Call it in the task that runs the
        simulation; the seat's owner closes the seat once the simulation is over."""
        current_seat.set(self)
        return await simulation

    def close(self, final: Any = None, after: Any = None) -> None:
        """The conversation is over: the move in flight gets `final`, any later one `after`."""
        if self.closed:
            return
        self._final, self._after = final, after
        self._closed.set()
        if self._pending is not None:
            _settle(self._pending, Reply(ended=True, final=final))
            self._pending = None
        while not self._queue.empty():
            _settle(self._queue.get_nowait(), Reply(ended=True, final=after))

    # --- the orchestrator's side (the seated participant) -----------------------------------
    def sit(self, participant: OutsideAgent | OutsideUser) -> None:
        self.participant = participant

    def started(self, history: list[Message]) -> None:
        """The conversation so far as the seat's side sees it, shown with the first reply."""
        self._earlier = tuple(history)

    async def next_move(self) -> ChatMessage:
        """The policy's next message, as the conversation records it."""
        self._waiting.set()
        try:
            move = await self._queue.get()
        finally:
            self._waiting.clear()
        self._pending = move
        if isinstance(move.message, Exception):
            raise move.message
        return outside_message(self.side, move.message)

    def deliver(self, incoming: Incoming) -> None:
        """Answer the move in flight with what the orchestrator handed this side."""
        if self._pending is None:
            if incoming is not None:
                self._unanswered.append(incoming)  # before the policy's first move
            return
        reply = Reply(incoming=(*self._unanswered, incoming), earlier=self._earlier)
        self._unanswered, self._earlier = [], ()
        _settle(self._pending, reply)
        self._pending = None


def _settle(move: _Move, reply: Reply) -> None:
    if not move.answer.done():  # the policy may have given up on this move
        move.answer.set_result(reply)


#: The seat of the simulation being run in this task (`Seat.host` sets it).
current_seat: contextvars.ContextVar[Seat | None] = contextvars.ContextVar(
    "tau_current_seat", default=None
)

_UNSEATED = (
    "an outside participant is seated by tau-harness serve, run --agent cmd, the Gymnasium and "
    "verifiers environments or the Inspect task"
)


def _seat_for(side: Side) -> Seat:
    seat = current_seat.get()
    if seat is None or seat.side != side:
        raise ValueError(_UNSEATED)
    return seat


class OutsideAgent(Agent):
    """The agent's seat, taken by the outside policy of the simulation's `Seat`."""

    implementation = "outside"

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        self.seat = _seat_for("agent")
        self.seat.sit(self)
        self._opened = False

    def start(self, history: list[Message]) -> None:
        super().start(history)
        if not self._opened:  # the policy has not seen what came before its first turn
            self.seat.started(self.history)

    async def opening(self) -> ChatMessage | None:
        if not self.seat.opens:
            return None  # the reference's greeting
        self._opened = True
        return await self.seat.next_move()

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        self.seat.deliver(incoming)
        message = await self.seat.next_move()
        self.history.append(message)
        return message

    def is_stop(self, message: ChatMessage) -> bool:
        return is_agent_stop(message)


class OutsideSoloAgent(OutsideAgent):
    """The agent's seat in a solo run (a ticket, the user's tools, no one to talk to)."""

    solo = True


class OutsideUser(UserSimulator):
    """The user's seat, taken by the outside policy of the simulation's `Seat`."""

    implementation = "outside"

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        self.seat = _seat_for("user")
        self.seat.sit(self)

    def start(self, history: list[Message]) -> None:
        super().start(history)
        self.seat.started(self.history)

    async def respond(self, incoming) -> ChatMessage:
        self.record(incoming)
        self.seat.deliver(incoming)
        message = await self.seat.next_move()
        self.history.append(message)
        return message
