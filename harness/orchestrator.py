"""One simulation: the agent and the user take turns on one episode until someone ends it.

Turn rules follow the reference's half-duplex orchestrator: a message goes from agent to user,
user to agent, or either to the environment (their tool calls, each on that side's own MCP
session) and back to its sender. The run ends on the user's stop tokens, the agent's stop, the
step limit, or too many failed tool calls; in a domain with terminate tools (the original
τ-bench's `transfer_to_human_agents`), also right after the agent calls one, as that reference
ends its episode then (the message's later tool calls are not run).

A benchmark's own rules (`harness.benchmarks`) change a few of these: the original τ-bench's
user opens the conversation (no agent greeting), only its `###STOP###` ends it, its agent has a
number of actions rather than steps, and it has no limit on failed tool calls.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from tau_mcp.conversation.errors import ParticipantFailed
from tau_mcp.conversation.messages import (
    USER_STOP_TOKENS,
    ChatMessage,
    Message,
    ToolMessage,
    is_user_stop,
    now,
)
from tau_mcp.harness.agents.base import Agent
from tau_mcp.harness.backends import ToolSession
from tau_mcp.simulator.base import UserSimulator

DEFAULT_MAX_STEPS = 200
DEFAULT_MAX_ERRORS = 10
GREETING = "Hi! How can I help you today?"


class Termination(StrEnum):
    USER_STOP = "user_stop"
    AGENT_STOP = "agent_stop"
    MAX_STEPS = "max_steps"
    TOO_MANY_ERRORS = "too_many_errors"
    AGENT_ERROR = "agent_error"
    USER_ERROR = "user_error"
    TIMEOUT = "timeout"
    INFRASTRUCTURE_ERROR = "infrastructure_error"


class Role(StrEnum):
    AGENT = "agent"
    USER = "user"
    ENV = "env"


@dataclass
class Limits:
    max_steps: int = DEFAULT_MAX_STEPS
    #: Failed tool calls that end the conversation (None: no limit, as in the original τ-bench).
    max_errors: int | None = DEFAULT_MAX_ERRORS
    #: Seconds of wall-clock time; checked between turns, as the reference checks it (a turn
    #: under way is not cut short).
    timeout: float | None = None
    #: The agent's messages a conversation may have (the original τ-bench's 30 actions); once
    #: the last one is answered, the conversation ends with max_steps unless it ended already.
    max_agent_actions: int | None = None


@dataclass(frozen=True)
class Rules:
    """How a benchmark's conversations run where they differ from tau2's."""

    #: The user speaks first, answering this line (which is not part of the conversation).
    user_opening: str | None = None
    #: What in a user's message ends the conversation.
    user_stop_tokens: tuple[str, ...] = USER_STOP_TOKENS


TAU2_RULES = Rules()


@dataclass
class Conversation:
    """What a finished simulation hands to grading and to the results file."""

    messages: list[Message]
    termination: Termination
    start_time: str
    end_time: str
    duration: float
    steps: int
    tool_errors: int
    history_length: int
    extra: dict[str, Any] = field(default_factory=dict)
    # What tools' own model calls cost (retrieval embeddings, rerankers), by who called them.
    tool_costs: dict[str, float] = field(default_factory=dict)
    # The injected faults the calls met (a robustness run, docs/faults.md), in order.
    faults: list[dict[str, Any]] = field(default_factory=list)


class EmptyMessageError(RuntimeError):
    """A participant produced neither text nor tool calls; the simulation is retried."""


def _require_content(message: ChatMessage) -> None:
    if not message.has_text() and not message.is_tool_call():
        raise EmptyMessageError(f"the {message.role} produced an empty message")


class Orchestrator:
    def __init__(
        self,
        agent: Agent,
        user: UserSimulator,
        agent_tools: ToolSession,
        user_tools: ToolSession | None,
        *,
        limits: Limits | None = None,
        solo: bool = False,
        user_tool_names: set[str] | None = None,
        agent_tool_names: set[str] | None = None,
        enforce_protocol: bool = False,
        greeting: str = GREETING,
        terminate_tools: frozenset[str] = frozenset(),
        rules: Rules = TAU2_RULES,
    ) -> None:
        self.agent, self.user = agent, user
        self.rules = rules
        self.agent_actions = 0
        self.failure: str | None = None
        self.terminate_tools = terminate_tools
        self.greeting = greeting
        self.enforce_protocol = enforce_protocol
        self.agent_tools, self.user_tools = agent_tools, user_tools
        self.limits = limits or Limits()
        self.solo = solo
        self.user_tool_names = user_tool_names or set()
        self.agent_tool_names = agent_tool_names or set()
        self.trajectory: list[Message] = []
        self.steps = 0
        self.errors = 0
        # Tool errors that are injected faults themselves (not the agent's doing): outside
        # the error limit, which counts the rest (docs/faults.md).
        self.injected_errors = 0
        self.faults: list[dict[str, Any]] = []
        self.tool_costs: dict[str, float] = {}
        self.done = False
        self.termination: Termination | None = None
        self.sender: Role | None = None
        self.receiver: Role | None = None
        self.message: ChatMessage | list[ToolMessage] | None = None
        self._started = time.perf_counter()  # reset when the run starts

    # --- setup ------------------------------------------------------------------------------
    def count_taken(self, opening: list[Message], history_length: int) -> None:
        """Continuing a conversation's opening (a fork): count the steps and failed tool calls
        its messages after the task's own history took, as the run that made them counted
        them (the opening agent message is no step; a batch of tool results is one)."""
        steps = errors = 0
        previous: Message | None = None
        for index, message in enumerate(opening[history_length:]):
            if isinstance(message, ToolMessage):
                errors += message.error
                steps += not isinstance(previous, ToolMessage)
            elif not (index == 0 and history_length == 0 and message.role == "assistant"):
                steps += 1
            previous = message
        self.steps, self.errors = steps, errors

    async def _begin(self, history: list[Message]) -> None:
        if history:
            self._resume_from(history)
            return
        self.user.start([])
        if self.rules.user_opening is not None and not self.solo:
            self.agent.start([])
            try:
                first = await self.user.opening(self.rules.user_opening)
            except ParticipantFailed as exc:
                self.failure = f"{Role.USER}: {exc}"
                self._finish(Termination.USER_ERROR)
                return
            _require_content(first)
            self.trajectory = [first]
            self._route(Role.USER, first)
            return
        if not self.solo:
            # The first agent message, unless the agent opens itself (an outside agent).
            opening = await self.agent.opening()
            if opening is None:
                opening = ChatMessage(role="assistant", content=self.greeting, cost=0.0)
            self.agent.start([opening])
            self.trajectory = [opening]
            self._route(Role.AGENT, opening)
            if self.agent.is_stop(opening):
                self._finish(Termination.AGENT_STOP)
            return
        self.agent.start([])
        first = await self.agent.respond(None)
        self.trajectory = [first]
        self.sender, self.message = Role.AGENT, first
        if first.is_tool_call():
            self.receiver = Role.ENV
        else:
            self.receiver = Role.USER
            self._finish(
                Termination.AGENT_STOP if self.agent.is_stop(first) else Termination.AGENT_ERROR
            )

    def _resume_from(self, history: list[Message]) -> None:
        """Pick the conversation up where the task's message history leaves it."""
        last = history[-1]
        self.trajectory = list(history)
        if isinstance(last, ToolMessage):
            self.sender, self.message = Role.ENV, [last]
            to_agent = last.requestor == "assistant"
            self.receiver = Role.AGENT if to_agent else Role.USER
            self.agent.start(history[:-1] if to_agent else history)
            self.user.start(history if to_agent else history[:-1])
            return
        if last.role == "assistant":
            self.agent.start(history)
            self.user.start(history[:-1])
            self._route(Role.AGENT, last)
            if self.agent.is_stop(last):
                self._finish(Termination.AGENT_STOP)
        else:
            self.user.start(history)
            self.agent.start(history[:-1])
            self._route(Role.USER, last)
            if is_user_stop(last):
                self._finish(Termination.USER_STOP)

    def _route(self, sender: Role, message: ChatMessage) -> None:
        self.sender, self.message = sender, message
        if message.is_tool_call():
            self.receiver = Role.ENV
        else:
            self.receiver = Role.USER if sender == Role.AGENT else Role.AGENT

    def unanswered(self) -> ChatMessage | list[ToolMessage] | None:
        """What the agent would have been handed next had the conversation gone on (the
        user's last message, its last tool results), or None."""
        if self.receiver == Role.AGENT and self.sender != Role.AGENT:
            return self.message
        return None

    def _finish(self, reason: Termination) -> None:
        self.done = True
        self.termination = reason

    # --- turns ------------------------------------------------------------------------------
    def _user_stops(self, message: ChatMessage) -> bool:
        tokens = self.rules.user_stop_tokens
        if tokens is USER_STOP_TOKENS:
            return is_user_stop(message)
        if message.is_tool_call() or message.content is None:
            return False
        return any(token in message.content for token in tokens)

    async def _step(self) -> None:
        try:
            await self._turn()
        except ParticipantFailed as exc:  # its own rules failed on its model's reply
            self.failure = f"{self.receiver}: {exc}"
            self._finish(
                Termination.USER_ERROR if self.receiver == Role.USER else Termination.AGENT_ERROR
            )

    async def _turn(self) -> None:
        if self.receiver == Role.USER:
            reply = await self.user.respond(self.message)  # type: ignore[arg-type]
            _require_content(reply)
            self.trajectory.append(reply)
            self._route(Role.USER, reply)
            if self._user_stops(reply):
                self._finish(Termination.USER_STOP)
        elif self.receiver == Role.AGENT:
            reply = await self.agent.respond(self.message)
            self.agent_actions += 1
            _require_content(reply)
            self.trajectory.append(reply)
            self._route(Role.AGENT, reply)
            if self.agent.is_stop(reply):
                self._finish(Termination.AGENT_STOP)
            elif self.solo and not reply.is_tool_call():
                self._finish(Termination.AGENT_ERROR)
        else:
            assert isinstance(self.message, ChatMessage) and self.message.tool_calls is not None
            results = []
            for call in self.message.tool_calls:
                results.append(await self._execute(call, len(self.trajectory) + len(results)))
                if call.name in self.terminate_tools and call.requestor != "user":
                    self._finish(Termination.AGENT_STOP)
                    break
            self.trajectory.extend(results)
            self.receiver, self.sender, self.message = self.sender, Role.ENV, results
        self.steps += 1
        if self.enforce_protocol:
            self._check_protocol()

    def _check_protocol(self) -> None:
        """Optional strict mode: a message is text or tool calls, never both. A message that
        ends the conversation is checked too (a stop that also calls tools is an error)."""
        if self.sender == Role.ENV or not isinstance(self.message, ChatMessage):
            return
        if self.message.has_text() and self.message.is_tool_call():
            self._finish(
                Termination.USER_ERROR if self.sender == Role.USER else Termination.AGENT_ERROR
            )

    async def _execute(self, call, turn_idx: int) -> ToolMessage:
        session = self._session_for(call.requestor, call.name)
        if session is None:
            result_text, error = "Error: User tools not available", True
        else:
            result = await session.call_tool(call.name, call.arguments)
            result_text, error = result.text, result.error
            if result.cost:
                self.tool_costs[call.requestor] = (
                    self.tool_costs.get(call.requestor, 0.0) + result.cost
                )
            if result.fault is not None:
                self._note_fault(result.fault, call, turn_idx, error)
        if error:
            self.errors += 1
        return ToolMessage(
            id=call.id, content=result_text, requestor=call.requestor, error=error, timestamp=now()
        )

    def _note_fault(self, fault: dict[str, Any], call, turn_idx: int, error: bool) -> None:
        """Record an injected fault with the tool message it shows in."""
        self.faults.append(
            {**fault, "turn_idx": turn_idx, "tool_call_id": call.id, "requestor": call.requestor}
        )
        if error and fault.get("new"):
            self.injected_errors += 1

    def _session_for(self, requestor: str, name: str) -> ToolSession | None:
        if requestor == "user":
            return self.user_tools
        if self.solo and name in self.user_tool_names and name not in self.agent_tool_names:
            return self.user_tools
        return self.agent_tools

    def _check_limits(self) -> None:
        if self.receiver == Role.ENV:
            return
        if self.steps >= self.limits.max_steps:
            self._finish(Termination.MAX_STEPS)
        if (
            self.limits.max_errors is not None
            and self.errors - self.injected_errors >= self.limits.max_errors
        ):
            self._finish(Termination.TOO_MANY_ERRORS)
        actions = self.limits.max_agent_actions
        if (
            actions is not None
            and not self.done
            and self.receiver == Role.AGENT
            and self.agent_actions >= actions
        ):
            self._finish(Termination.MAX_STEPS)
        timeout = self.limits.timeout
        if timeout is not None and not self.done and self._elapsed() >= timeout:
            self._finish(Termination.TIMEOUT)

    def _elapsed(self) -> float:
        return time.perf_counter() - self._started

    async def run(self, history: list[Message]) -> Conversation:
        start_time, started = now(), time.perf_counter()
        self._started = started
        await self._begin(history)
        if self.enforce_protocol:
            self._check_protocol()  # the task's history may end on a mixed message
        while not self.done:
            await self._step()
            self._check_limits()
        messages = list(self.trajectory)
        for index, message in enumerate(messages):
            message.turn_idx = index
        assert self.termination is not None
        return Conversation(
            messages=messages,
            termination=self.termination,
            start_time=start_time,
            end_time=now(),
            duration=time.perf_counter() - started,
            steps=self.steps,
            tool_errors=self.errors,
            history_length=len(history),
            tool_costs=dict(self.tool_costs),
            extra={"error": self.failure} if self.failure else {},
            faults=list(self.faults),
        )
