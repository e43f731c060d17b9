"""The user-simulator interface the orchestrator drives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tau_mcp.conversation.messages import ChatMessage, Message, ToolMessage
from tau_mcp.conversation.reference_texts import ReferenceTexts
from tau_mcp.conversation.taubench_texts import TauBenchTexts
from tau_mcp.conversation.tools import ToolInfo
from tau_mcp.servers.engine.tasks import Task


@dataclass
class UserContext:
    task: Task
    domain: str
    guidelines: str | None
    tools: list[ToolInfo]
    llm: str | None = None
    llm_args: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    #: The data folder's reference texts; when set, the llm user builds its requests from them.
    texts: ReferenceTexts | None = None
    #: The original τ-bench's texts (its user strategies build their requests from them).
    taubench: TauBenchTexts | None = None
    #: How many times the original τ-bench builds this simulator before the conversation (its
    #: run.py builds one per task, and one more per run), each build calling the model with no
    #: instruction; 0: those calls are not sent (the default, see docs/taubench.md).
    builds: int = 0


class UserSimulator:
    """`respond` gets the agent's message or the results of the user's own tool calls and
    returns the user's next message (text, or tool calls on the user's own tools)."""

    implementation = "user"
    #: tau-mcp's version of this simulator's behaviour, recorded in the results header.
    version = "1"

    def __init__(self, context: UserContext) -> None:
        self.context = context
        self.history: list[Message] = []

    def start(self, history: list[Message]) -> None:
        self.history = [m for m in history if _user_can_see(m)]

    async def respond(self, incoming: ChatMessage | list[ToolMessage]) -> ChatMessage:
        raise NotImplementedError

    async def opening(self, line: str) -> ChatMessage:
        """The user's first message in a conversation the user opens (the original τ-bench's):
        by default the reply to `line`, the opening the user's model is shown, which is not
        part of the conversation."""
        return await self.respond(ChatMessage(role="assistant", content=line))

    def record(self, incoming: ChatMessage | list[ToolMessage]) -> None:
        if isinstance(incoming, list):
            self.history.extend(incoming)
        elif incoming.has_text() or incoming.is_tool_call():
            self.history.append(incoming)


def _user_can_see(message: Message) -> bool:
    if isinstance(message, ToolMessage):
        return message.requestor == "user"
    if message.role == "assistant":
        return not message.is_tool_call()
    return message.role == "user"
