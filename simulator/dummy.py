"""The dummy user of solo runs: it is never asked to speak."""

from __future__ import annotations

from tau_mcp.conversation.messages import ChatMessage, ToolMessage
from tau_mcp.simulator.base import UserSimulator


class DummyUser(UserSimulator):
    implementation = "dummy"

    def start(self, history) -> None:
        self.history = []

    async def respond(self, incoming: ChatMessage | list[ToolMessage]) -> ChatMessage:
        raise RuntimeError("the dummy user cannot take a turn; use it only with a solo agent")
