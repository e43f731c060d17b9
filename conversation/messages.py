"""Conversation messages in the reference's results layout (what a trajectory is made of)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from tau_mcp.servers.engine.tasks import Requestor

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
USER_STOP_TOKENS = (STOP, TRANSFER, OUT_OF_SCOPE)


def now() -> str:
    """Timestamps as the reference writes them (local ISO time), so trajectories sort by them."""
    return datetime.now().isoformat()


class ToolCall(BaseModel):
    id: str = ""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Requestor = "assistant"


class ChatMessage(BaseModel):
    """A message from the agent (`assistant`) or the user: text or tool calls, never both."""

    role: Literal["assistant", "user", "system"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    turn_idx: int | None = None
    timestamp: str | None = Field(default_factory=now)
    cost: float | None = None
    usage: dict[str, Any] | None = None
    raw_data: dict[str, Any] | None = None

    def has_text(self) -> bool:
        return bool(self.content and self.content.strip())

    def is_tool_call(self) -> bool:
        return self.tool_calls is not None


class ToolMessage(BaseModel):
    """A tool's result, addressed back to whoever made the call."""

    id: str
    role: Literal["tool"] = "tool"
    content: str | None = None
    requestor: Requestor = "assistant"
    error: bool = False
    turn_idx: int | None = None
    timestamp: str | None = Field(default_factory=now)


Message = ChatMessage | ToolMessage


def parse_message(raw: dict[str, Any]) -> Message:
    """A message dict from a results file or a task's history (unknown fields ignored)."""
    if raw.get("role") == "tool":
        known = {k: v for k, v in raw.items() if k in ToolMessage.model_fields and v is not None}
        return ToolMessage.model_validate(known)
    known = {k: v for k, v in raw.items() if k in ChatMessage.model_fields}
    return ChatMessage.model_validate(known)


def dump_message(message: Message) -> dict[str, Any]:
    return message.model_dump(mode="json")


def is_user_stop(message: ChatMessage) -> bool:
    """The user ends the conversation by saying one of the stop tokens."""
    if message.is_tool_call() or message.content is None:
        return False
    return any(token in message.content for token in USER_STOP_TOKENS)


def is_agent_stop(message: ChatMessage) -> bool:
    return message.content is not None and STOP in message.content


def history_messages(task) -> list[Message]:
    """The task's initial message history, stamped a second apart and ending just now."""
    state = task.initial_state
    raw = (state.message_history or []) if state is not None else []
    messages = [parse_message(m.model_dump()) for m in raw]
    start = datetime.now() - timedelta(seconds=len(messages))
    for i, message in enumerate(messages):
        message.turn_idx = None
        message.timestamp = (start + timedelta(seconds=i)).isoformat()
    return messages
