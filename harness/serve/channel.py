"""The outside agent as the orchestrator sees it: each MCP call on the simulation's endpoint is
one agent move (a tool call or a text turn), handed to the orchestrator, whose answer (the tool's
result, or the user's reply) goes back as the call's result.

The orchestrator keeps its own rules (turns, the user's tool calls, stop tokens, limits); this
module only turns its pull-style `Agent.respond` into the push-style calls of an MCP client.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import time
from dataclasses import dataclass, field
from typing import Any

from tau_mcp.conversation.messages import STOP, ChatMessage, Message, ToolMessage, is_agent_stop
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming


@dataclass(frozen=True)
class Answer:
    """What one MCP call returns: text and whether it is an error result."""

    text: str
    error: bool = False


@dataclass
class Move:
    message: ChatMessage
    answer: asyncio.Future = field(repr=False)


class MoveChannel:
    """One simulation's queue of agent moves. Moves are played one at a time, in call order:
    a client that sends tool calls in parallel gets them recorded one turn each."""

    def __init__(self) -> None:
        self._moves: asyncio.Queue[Move] = asyncio.Queue()
        self._lock = asyncio.Lock()
        self._pending: Move | None = None
        self._ids = itertools.count(1)
        self.refusal: str | None = None  # set once the conversation is over
        self.moves = 0
        self.preamble: str | None = None  # a task's earlier conversation, shown with answer 1
        self.orchestrator: Any = None  # set once the conversation is set up (live views)
        self.last_activity = time.monotonic()  # the last move made or answered

    @property
    def busy(self) -> bool:
        """A move is waiting for its answer (the server, not the agent, has the next step)."""
        return self._pending is not None or not self._moves.empty()

    @property
    def closed(self) -> bool:
        return self.refusal is not None

    def call_id(self) -> str:
        return f"call_{next(self._ids)}"

    # --- the endpoint's side ----------------------------------------------------------------
    async def play(self, message: ChatMessage) -> Answer:
        """Make one agent move and wait for what it gets back."""
        async with self._lock:
            if self.refusal is not None:
                return Answer(self.refusal, True)
            move = Move(message, asyncio.get_running_loop().create_future())
            self.moves += 1
            self.last_activity = time.monotonic()
            self._moves.put_nowait(move)
            try:
                return await move.answer
            finally:
                self.last_activity = time.monotonic()

    async def stop(self) -> Answer:
        """End the conversation from the agent's side (the reference's agent stop token)."""
        return await self.play(ChatMessage(role="assistant", content=STOP))

    def close(self, final: Answer, refusal: str) -> None:
        """The conversation is over: the move in flight gets `final`, any later one `refusal`."""
        self.refusal = refusal
        if self._pending is not None:
            _settle(self._pending, final)
            self._pending = None
        while not self._moves.empty():
            _settle(self._moves.get_nowait(), Answer(refusal, True))

    # --- the orchestrator's side ------------------------------------------------------------
    async def next_move(self) -> ChatMessage:
        move = await self._moves.get()
        self._pending = move
        return move.message

    def deliver(self, incoming: Incoming) -> None:
        """Answer the move in flight with what the orchestrator handed back to the agent."""
        answer = _render(incoming)
        if self.preamble is not None and self._pending is not None:
            answer = Answer(f"{self.preamble}\n\n{answer.text}", answer.error)
            self.preamble = None
        if self._pending is not None:
            _settle(self._pending, answer)
            self._pending = None
        elif answer.text:
            # The task's history ends on the user or on results: the agent's first answer
            # carries them.
            label = "[tool result]" if isinstance(incoming, list) else "[customer]"
            line = f"{label} {answer.text}"
            self.preamble = f"{self.preamble}\n{line}" if self.preamble else line


def _settle(move: Move, answer: Answer) -> None:
    if not move.answer.done():  # the client may have given up on this call
        move.answer.set_result(answer)


def _render(incoming: Incoming) -> Answer:
    if incoming is None:
        return Answer("")
    if isinstance(incoming, list):
        if len(incoming) == 1:
            return Answer(incoming[0].content or "", incoming[0].error)
        return Answer("\n".join(m.content or "" for m in incoming), any(m.error for m in incoming))
    return Answer(incoming.content or "")


def history_text(history: list[Message]) -> str:
    """A task's earlier conversation as the agent could have seen it, one line a message."""
    lines = ["(The conversation so far, from before you joined:)"]
    for message in history:
        if isinstance(message, ToolMessage):
            lines.append(f"[tool result] {message.content or ''}")
        elif message.is_tool_call():
            calls = ", ".join(f"{c.name}({c.arguments})" for c in message.tool_calls or [])
            lines.append(f"[{message.role} tool call] {calls}")
        else:
            speaker = "customer" if message.role == "user" else "you"
            lines.append(f"[{speaker}] {message.content or ''}")
    return "\n".join(lines)


#: The channel of the simulation being set up in this task (read by `OutsideAgent`).
current_channel: contextvars.ContextVar[MoveChannel | None] = contextvars.ContextVar(
    "tau_current_channel", default=None
)


class OutsideAgent(Agent):
    """The agent behind a simulation's MCP endpoint: each turn is the endpoint's next move."""

    implementation = "mcp"

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        channel = current_channel.get()
        if channel is None:
            raise ValueError(
                "the outside agent is driven through `tau-harness serve` or `run --agent cmd`"
            )
        self.channel = channel

        self._opened = False

    def start(self, history: list[Message]) -> None:
        super().start(history)
        if not self._opened and self.history:
            # The task starts mid-conversation: the agent's first answer shows what came before.
            self.channel.preamble = history_text(self.history)

    async def opening(self) -> ChatMessage | None:
        self._opened = True
        return await self.channel.next_move()

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        self.channel.deliver(incoming)
        message = await self.channel.next_move()
        self.history.append(message)
        return message

    def is_stop(self, message: ChatMessage) -> bool:
        return is_agent_stop(message)
