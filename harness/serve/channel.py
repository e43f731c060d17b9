"""The outside agent's seat as an MCP endpoint sees it: each MCP call on the simulation's
endpoint is one agent move (a tool call or a text turn) on the simulation's `Seat`
(`tau_mcp.harness.seat`), and what the move gets back (the tool's result, or the customer's
reply) is the call's result, rendered as text.

The seat keeps the rendezvous and the rule for how the agent ends the conversation; this module
only renders its replies: the first answer of a task that starts mid-conversation carries what
came before, and once the conversation is over the move in flight gets its ending and later
calls a refusal.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from tau_mcp.conversation.messages import ChatMessage, Message, ToolMessage
from tau_mcp.harness.agents.base import Incoming
from tau_mcp.harness.seat import Reply, Seat


@dataclass(frozen=True)
class Answer:
    """What one MCP call returns: text and whether it is an error result."""

    text: str
    error: bool = False


class MoveChannel(Seat):
    """One served simulation's agent seat; the agent writes its own opening (its first call
    opens the conversation). Moves are played one at a time, in call order: a client that
    sends tool calls in parallel gets them recorded one turn each."""

    def __init__(self) -> None:
        super().__init__("agent", opens=True)
        self._ids = itertools.count(1)
        self.refusal: str | None = None  # set once the conversation is over
        self.orchestrator: Any = None  # set once the conversation is set up (live views)

    def call_id(self) -> str:
        return f"call_{next(self._ids)}"

    async def play(self, message: ChatMessage) -> Answer:
        """Make one agent move and wait for what it gets back."""
        return _answer(await self.move(message))

    async def stop(self) -> Answer:
        """End the conversation from the agent's side (the seat's rule: the agent stop)."""
        return _answer(await self.end())

    def close(self, final: Any = None, after: Any = None) -> None:
        """The conversation is over: the move in flight gets `final` (an `Answer`), any later
        one the refusal `after` (a sentence)."""
        if self.closed:
            return
        self.refusal = str(after or "")
        super().close(final, Answer(self.refusal, True))


def _answer(reply: Reply) -> Answer:
    if reply.ended:
        final = reply.final
        return final if isinstance(final, Answer) else Answer("The conversation is over.", True)
    lines = [history_text(list(reply.earlier))] if reply.earlier else []
    *before, last = reply.incoming or (None,)
    for incoming in before:  # what reached the agent before its first move
        text = _render(incoming).text
        if text:
            label = "[tool result]" if isinstance(incoming, list) else "[customer]"
            lines.append(f"{label} {text}")
    answer = _render(last)
    if lines:
        return Answer("\n".join(lines) + "\n\n" + answer.text, answer.error)
    return answer


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
