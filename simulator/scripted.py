"""Scripted users: no model, they follow the task's gold plan.

`ScriptedUser` (`--user scripted` in runs): its first turn (even after a task's message
history) states the scenario's reason for calling, it performs its runs of gold user actions on
its own tools right before it speaks, and ends the call (###STOP###) when the agent speaks and
it has nothing left to do. Oracle runs and the demo rely on exactly that.

`ScriptedCustomer` (`tau-harness play --user scripted`): the same plan, but a person plays the
agent, so it talks like a customer (`simulator/voice.py`): it opens with its reason for calling
in the first person, tells what it knows (name, ids) when the agent answers, and stays a few
turns more before it leaves, or leaves when the agent asks whether it needs anything else.
"""

from __future__ import annotations

import itertools
from collections import deque

from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall, ToolMessage
from tau_mcp.conversation.plan import user_runs
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.scenario import reason_for_call
from tau_mcp.simulator.voice import asks_if_done, customer_lines

DONE_TEXT = "Okay, I have done that."
CLOSING_TEXT = f"Thanks, that is all. {STOP}"


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
            self._plan_turn(incoming)
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

    def _plan_turn(self, incoming: ChatMessage) -> None:
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
            self.after = CLOSING_TEXT

    def _say(self, content: str | None, calls: list[ToolCall] | None = None) -> ChatMessage:
        message = ChatMessage(role="user", content=content, tool_calls=calls, cost=0.0)
        self.history.append(message)
        return message


#: What the customer says once it has told everything, while the agent keeps talking.
FOLLOW_UPS = (
    "Okay. Is there anything else you need from me?",
    "Alright. Could you let me know once it is all sorted out?",
)


class ScriptedCustomer(ScriptedUser):
    """`play`'s scripted user: the gold plan of `ScriptedUser`, said as a customer would."""

    implementation = "scripted-customer"

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        self.opening, details = customer_lines(context.task.user_scenario)
        self.lines = deque(details)
        self.follow_ups = deque(FOLLOW_UPS)

    def _plan_turn(self, incoming: ChatMessage) -> None:
        if not self.opened:
            super()._plan_turn(incoming)  # the leading user actions, if any
            self.after = self.opening
        elif self.runs:
            super()._plan_turn(incoming)  # the next run of user actions, then DONE_TEXT
        elif self.lines:
            self.after = self.lines.popleft()
        elif asks_if_done(incoming.content):
            self.after = f"No, that is all. Thank you! {STOP}"
        elif self.follow_ups:
            self.after = self.follow_ups.popleft()
        else:
            self.after = CLOSING_TEXT
