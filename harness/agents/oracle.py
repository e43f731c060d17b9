"""The oracle agent: performs the task's gold actions in order, then ends the conversation.

It needs no model. Runs of the user's gold actions are left to the user: the oracle asks for
them and skips past them when the user next speaks (the scripted user does them right then).
In solo mode it performs every gold action itself.
"""

from __future__ import annotations

import itertools
from collections import deque

from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall
from tau_mcp.conversation.plan import describe, gold_actions
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming


class OracleAgent(Agent):
    implementation = "oracle"

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        self.queue = deque(gold_actions(context.task))
        criteria = context.task.evaluation_criteria
        self.infos = list(criteria.communicate_info or []) if criteria is not None else []
        self._ids = itertools.count(1)

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        if isinstance(incoming, ChatMessage) and not self.context.solo:
            # The user speaks after doing its pending run of actions.
            while self.queue and self.queue[0].requestor == "user":
                self.queue.popleft()
        if self.queue and (self.context.solo or self.queue[0].requestor == "assistant"):
            action = self.queue.popleft()
            call = ToolCall(
                id=f"oracle_{next(self._ids)}", name=action.name, arguments=dict(action.arguments)
            )
            return self._say(None, [call])
        if self.queue:
            steps = []
            for action in itertools.takewhile(lambda a: a.requestor == "user", self.queue):
                steps.append(describe(action))
            return self._say(
                "Please do the following on your side, then tell me when done: " + "; ".join(steps)
            )
        return self._say(self._closing())

    def _closing(self) -> str:
        if not self.infos:
            return f"Everything is taken care of. {STOP}"
        return "Here is what you need to know:\n" + "\n".join(self.infos) + f"\n{STOP}"

    def _say(self, content: str | None, calls: list[ToolCall] | None = None) -> ChatMessage:
        message = ChatMessage(role="assistant", content=content, tool_calls=calls, cost=0.0)
        self.history.append(message)
        return message

    def is_stop(self, message: ChatMessage) -> bool:
        return message.content is not None and STOP in message.content
