"""The oracle agent: performs the task's gold actions in order, then ends the conversation.

It needs no model. Runs of the user's gold actions are left to the user: the oracle asks for
them and skips past them when the user next speaks (the scripted user does them right then).
In solo mode it performs every gold action itself.
"""

from __future__ import annotations

import itertools
from collections import deque

from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall, ToolMessage
from tau_mcp.conversation.plan import describe, gold_actions
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming
from tau_mcp.servers.engine.faults import is_retryable_fault


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


class RetryingOracleAgent(OracleAgent):
    """The oracle as a careful client of a flaky back end (`--agent oracle-retry`): a call
    whose result is a retryable injected fault (transient, timeout, rate limit:
    docs/faults.md) is made again, up to `MAX_RETRIES` times in a row, before the oracle moves
    on. Without faults it is the oracle."""

    implementation = "oracle-retry"
    MAX_RETRIES = 8

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        self._last: ToolCall | None = None
        self._retries = 0

    async def respond(self, incoming: Incoming) -> ChatMessage:
        if self._should_retry(incoming) and self._last is not None:
            self.record(incoming)
            self._retries += 1
            again = ToolCall(
                id=f"oracle_{next(self._ids)}",
                name=self._last.name,
                arguments=dict(self._last.arguments or {}),
            )
            self._last = again
            return self._say(None, [again])
        self._retries = 0
        message = await super().respond(incoming)
        self._last = message.tool_calls[0] if message.tool_calls else None
        return message

    def _should_retry(self, incoming: Incoming) -> bool:
        if not isinstance(incoming, list) or self._last is None:
            return False
        if self._retries >= self.MAX_RETRIES:
            return False
        return any(
            isinstance(m, ToolMessage)
            and m.id == self._last.id
            and m.error
            and is_retryable_fault(m.content or "")
            for m in incoming
        )
