"""The agent interface: what the orchestrator asks of any agent, ours or a plug-in.

A plug-in agent is any subclass of `Agent` importable as `module:Class`; the harness builds it
with an `AgentContext` and then calls `start` once and `respond` once per agent turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_mcp.conversation.messages import ChatMessage, Message, ToolMessage
from tau_mcp.conversation.reference_texts import ReferenceTexts
from tau_mcp.conversation.taubench_texts import TauBenchTexts
from tau_mcp.harness.backends import ToolInfo
from tau_mcp.servers.engine.tasks import Task


@dataclass
class AgentContext:
    """Everything an agent may use: the task (oracles read its gold actions), the policy text,
    the tools it may call, and its model settings."""

    task: Task
    domain: str
    policy: str
    tools: list[ToolInfo]
    llm: str | None = None
    llm_args: dict[str, Any] = field(default_factory=dict)
    solo: bool = False
    seed: int | None = None
    # The solo agent's finishing tool as the reference declares it (None: our own wording).
    stop_tool: ToolInfo | None = None
    #: The data folder's reference texts; when set, model-driven agents build their requests
    #: from them (the reference's prompts), else from our own prompts.
    texts: ReferenceTexts | None = None
    #: The original τ-bench's texts (its agent strategies build their prompts from them).
    taubench: TauBenchTexts | None = None
    #: The few-shot agent's examples, and which of them this simulation shows (the indices the
    #: original's run draws for it; see harness.run_plan).
    few_shot_displays: list[str] | None = None
    draw: list[int] | None = None


Incoming = ChatMessage | list[ToolMessage] | None


class Agent:
    """Base class. `respond` gets the user's message, the results of the agent's own tool calls,
    or None (first turn of a solo run) and returns the agent's next message."""

    #: Shown in results (`info.agent_info.implementation`).
    implementation = "agent"
    #: Agents that work a ticket alone (with the dummy user) set this.
    solo = False

    def __init__(self, context: AgentContext) -> None:
        self.context = context
        self.history: list[Message] = []

    @classmethod
    def cannot_run(cls, task: Task) -> str | None:
        """Why this agent cannot run `task`, as what the task has ("no gold actions"), or None
        when it can. A run leaves such tasks out and says how many, as the reference filters a
        split for its gt and solo agents."""
        return None

    def start(self, history: list[Message]) -> None:
        """Called once with the conversation so far (from the task's initial state, else the
        greeting); keeps only what the agent itself could have seen."""
        self.history = [m for m in history if _agent_can_see(m)]

    async def opening(self) -> ChatMessage | None:
        """The agent's first message of a conversation with no history; None (the default)
        means the reference's fixed greeting."""
        return None

    async def respond(self, incoming: Incoming) -> ChatMessage:
        raise NotImplementedError

    def is_stop(self, message: ChatMessage) -> bool:
        """Whether this message ends the conversation (by default an agent never ends it)."""
        return False

    def record(self, incoming: Incoming) -> None:
        if isinstance(incoming, list):
            self.history.extend(incoming)
        elif incoming is not None:
            self.history.append(incoming)


def _agent_can_see(message: Message) -> bool:
    if isinstance(message, ToolMessage):
        return message.requestor == "assistant"
    if message.role == "user":
        return not message.is_tool_call()
    return message.role == "assistant"
