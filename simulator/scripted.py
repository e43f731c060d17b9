"""A scripted user: no model, follows the task's gold plan.

Its first turn (even after a task's message history) states the scenario's reason for calling, performs its runs of gold user actions on its
own tools right before it speaks, and ends the call (###STOP###) when the agent speaks and it
has nothing left to do.
"""

from __future__ import annotations

import itertools
from collections import deque

from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall, ToolMessage
from tau_mcp.conversation.plan import user_runs
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.scenario import reason_for_call

DONE_TEXT = "Okay, I have done that."


class ScriptedUser(UserSimulator):
    implementation = "scripted"

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        self.leading, runs = user_runs(context.task)
        self.runs = deque(runs)
        self.calls: deque = deque()
        self.after = ""
        self.opened = False
        self._ids = itertools.count(1)

    async def respond(self, incoming: ChatMessage | list[ToolMessage]) -> ChatMessage:
        self.record(incoming)
        if isinstance(incoming, ChatMessage):
            self._plan_turn()
        if self.calls:
            action = self.calls.popleft()
            call = ToolCall(
                id=f"user_{next(self._ids)}",
                name=action.name,
                arguments=dict(action.arguments),
                requestor="user",
            )
            return self._say(None, [call])
        return self._say(self.after)

    def _plan_turn(self) -> None:
        """Decide this turn: the actions to perform first, then what to say."""
        if not self.opened:
            self.opened = True
            if self.leading and self.runs:
                self.calls.extend(self.runs.popleft())
            self.after = reason_for_call(self.context.task.user_scenario)
        elif self.runs:
            self.calls.extend(self.runs.popleft())
            self.after = DONE_TEXT
        else:
            self.after = f"Thanks, that is all. {STOP}"

    def _say(self, content: str | None, calls: list[ToolCall] | None = None) -> ChatMessage:
        message = ChatMessage(role="user", content=content, tool_calls=calls, cost=0.0)
        self.history.append(message)
        return message
