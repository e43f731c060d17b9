"""Orchestrator and llm participants: behaviours checked against the reference's half-duplex
orchestrator, user simulator and agent (telecom-relevant: user tool calls and their results,
continuing a task's message history, the trial seed, strict protocol endings)."""

from __future__ import annotations

from typing import Any

import pytest

from tau_mcp.conversation.messages import STOP, ChatMessage, ToolCall, ToolMessage, history_messages
from tau_mcp.harness.agents import Agent, AgentContext
from tau_mcp.harness.backends import ToolResult
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.orchestrator import Orchestrator
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.llm_user import as_seen_by_user
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.harness import load, mcp_backend


class RecordingSession:
    """One side's tools: answers every call with a fixed text and remembers it."""

    def __init__(self, side: str, fail: set[str] | None = None) -> None:
        self.side, self.fail, self.calls = side, fail or set(), []

    async def list_tools(self):
        return []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        if name in self.fail:
            return ToolResult(f"Error: {name} failed", True)
        return ToolResult(f"{self.side}:{name}", False)

    async def close(self) -> None:
        pass


class Scripted:
    """Replies from a list and keeps every incoming message it was handed."""

    def __init__(self, replies: list[ChatMessage]) -> None:
        self.replies, self.seen = list(replies), []

    async def next(self, incoming):
        self.seen.append(incoming)
        return self.replies.pop(0)


class ScriptAgent(Agent):
    def __init__(self, replies: list[ChatMessage], stop_on_token: bool = False) -> None:
        super().__init__(AgentContext(task=None, domain="telecom", policy="", tools=[]))  # type: ignore[arg-type]
        self.script, self.stop_on_token = Scripted(replies), stop_on_token

    async def respond(self, incoming):
        self.record(incoming)
        reply = await self.script.next(incoming)
        self.history.append(reply)
        return reply

    def is_stop(self, message: ChatMessage) -> bool:
        return self.stop_on_token and STOP in (message.content or "")


class ScriptUser(UserSimulator):
    def __init__(self, replies: list[ChatMessage]) -> None:
        super().__init__(UserContext(task=None, domain="telecom", guidelines=None, tools=[]))  # type: ignore[arg-type]
        self.script = Scripted(replies)

    async def respond(self, incoming):
        self.record(incoming)
        reply = await self.script.next(incoming)
        self.history.append(reply)
        return reply


def user_call(name: str, call_id: str) -> ChatMessage:
    return ChatMessage(role="user", tool_calls=[ToolCall(id=call_id, name=name, requestor="user")])


async def test_history_ending_on_a_user_tool_result_goes_to_the_user_first():
    history = [
        ChatMessage(role="user", content="My phone has no service."),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id="a1", name="get_customer_by_phone", arguments={})],
        ),
        ToolMessage(id="a1", content="{}", requestor="assistant"),
        ChatMessage(role="assistant", content="Please check your status bar."),
        user_call("check_status_bar", "u1"),
        ToolMessage(id="u1", content="Status Bar: No Service", requestor="user"),
    ]
    user = ScriptUser(
        [
            user_call("toggle_airplane_mode", "u2"),
            ChatMessage(role="user", content=f"Fixed! {STOP}"),
        ]
    )
    agent = ScriptAgent([])
    user_tools, agent_tools = RecordingSession("user"), RecordingSession("agent")
    conversation = await Orchestrator(agent, user, agent_tools, user_tools).run(history)

    assert conversation.termination.value == "user_stop"
    assert user_tools.calls == [("toggle_airplane_mode", {})] and agent_tools.calls == []
    # The user was handed the pending result of its own call, then the result of its next one.
    first, second = user.script.seen
    assert [m.id for m in first] == ["u1"] and [(m.id, m.requestor) for m in second] == [
        ("u2", "user")
    ]
    # Its history: the words of both sides and its own calls, never the agent's tool traffic.
    assert [(m.role, m.content) for m in user.history[:2]] == [
        ("user", "My phone has no service."),
        ("assistant", "Please check your status bar."),
    ]
    assert not any(isinstance(m, ToolMessage) and m.requestor == "assistant" for m in user.history)
    # The agent never saw the user's calls or their results.
    assert agent.history[-1].content == "Please check your status bar." and len(agent.history) == 4
    assert [m.turn_idx for m in conversation.messages] == list(range(9))
    assert conversation.steps == 3 and conversation.history_length == 6


async def test_user_tool_errors_count_toward_the_error_limit():
    from tau_mcp.harness.orchestrator import Limits

    user = ScriptUser([user_call("reboot_device", f"u{i}") for i in range(5)])
    agent = ScriptAgent([])
    user_tools = RecordingSession("user", fail={"reboot_device"})
    orchestrator = Orchestrator(
        agent, user, RecordingSession("agent"), user_tools, limits=Limits(max_errors=3)
    )
    conversation = await orchestrator.run([])
    assert conversation.termination.value == "too_many_errors" and conversation.tool_errors == 3
    results = [m for m in conversation.messages if isinstance(m, ToolMessage)]
    assert [(m.requestor, m.error) for m in results] == [("user", True)] * 3
    # The first user turn answered the greeting; the greeting is the agent's opening message.
    assert user.script.seen[0].content == "Hi! How can I help you today?"
    assert conversation.messages[0].role == "assistant" and conversation.messages[0].cost == 0.0


async def test_strict_mode_rejects_a_stop_that_also_calls_tools():
    def agent():
        mixed = ChatMessage(
            role="assistant", content=f"Done. {STOP}", tool_calls=[ToolCall(id="x", name="t")]
        )
        return ScriptAgent([mixed], stop_on_token=True)

    def user():
        return ScriptUser([ChatMessage(role="user", content="Help me.")])

    strict = await Orchestrator(
        agent(), user(), RecordingSession("agent"), None, enforce_protocol=True
    ).run([])
    assert strict.termination.value == "agent_error"
    lenient = await Orchestrator(agent(), user(), RecordingSession("agent"), None).run([])
    assert lenient.termination.value == "agent_stop"

    # A task history that itself ends on a mixed user message is caught before any turn.
    mixed_user = ChatMessage(
        role="user",
        content="I'll check.",
        tool_calls=[ToolCall(id="u", name="t", requestor="user")],
    )
    history = [ChatMessage(role="assistant", content="Hi"), mixed_user]
    early = await Orchestrator(
        ScriptAgent([]), ScriptUser([]), RecordingSession("agent"), None, enforce_protocol=True
    ).run(history)
    assert early.termination.value == "user_error" and early.steps == 0


def test_the_user_model_sees_roles_flipped():
    call_msg = user_call("check_status_bar", "u1")
    assert as_seen_by_user(ChatMessage(role="assistant", content="Hello")) == {
        "role": "user",
        "content": "Hello",
    }
    flipped = as_seen_by_user(call_msg)
    assert flipped["role"] == "assistant" and flipped["tool_calls"][0]["id"] == "u1"
    assert as_seen_by_user(ToolMessage(id="u1", content="ok", requestor="user")) == {
        "role": "tool",
        "tool_call_id": "u1",
        "content": "ok",
    }


@pytest.mark.needs_data
async def test_the_trial_seed_overrides_a_seed_in_the_model_arguments():
    domain = load("mock")
    with FakeLLMServer() as fake:
        fake.script("user-model", text("Create a task 'X' for user_1."), text(f"Bye {STOP}"))
        fake.script("agent-model", call("create_task", user_id="user_1", title="X"), text("Done."))
        config = RunConfig(
            judge_llm="none",
            domain="mock",
            agent="llm",
            agent_llm="openai/agent-model",
            agent_llm_args={**fake.llm_args(), "seed": 1},
            user="llm",
            user_llm="openai/user-model",
            user_llm_args={**fake.llm_args(), "seed": 2},
            task_ids=["create_task_1"],
            max_retries=0,
        )
        async with mcp_backend(domain) as backend:
            (sim,) = (await Runner(SimulationRunner(backend, domain, config)).run()).simulations
    assert sim["termination_reason"] == "user_stop"
    seeds = {r.get("seed") for reqs in fake.requests.values() for r in reqs}
    assert seeds == {sim["seed"]} and sim["seed"] not in (1, 2)


@pytest.mark.needs_data
def test_history_messages_of_a_task_are_stamped_in_order():
    task = load("mock").task("update_task_with_message_history")
    messages = history_messages(task)
    assert len(messages) == 4 and all(m.turn_idx is None for m in messages)
    stamps = [m.timestamp for m in messages]
    assert stamps == sorted(stamps)
