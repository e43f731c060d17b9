"""Discoverable agent tools that only announce something: escalation steps of special transfer
protocols, and an example tool.

What each announces is model-facing text: the result its description states in the data
folder's reference texts (`discoverable.announced_result`), or our own words without them."""

from __future__ import annotations

from tau_mcp.servers.domains.banking_knowledge.discoverable import (
    AGENT_CLASS,
    announced_result,
    discoverable,
)
from tau_mcp.servers.engine.toolkit import ToolKind


class EscalationTools:
    def _announce(self, name: str, own_words: str, executed: bool = True) -> str:
        data_dir = self.episode.data_dir if self.episode is not None else None
        message = announced_result(data_dir, "agent", name) or own_words
        if not executed:
            return message
        return f"{message}\n\nExecuted: {name}\nArguments: (no arguments)"

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def example_agent_tool_0000(self) -> str:
        """A placeholder showing how discoverable tools work."""
        return self._announce("example_agent_tool_0000", "The example tool ran.", executed=False)

    @discoverable(ToolKind.GENERIC, AGENT_CLASS)
    def initial_transfer_to_human_agent_0218(self) -> str:
        """First step of a special transfer protocol: the lines are reported busy."""
        return self._announce(
            "initial_transfer_to_human_agent_0218",
            "The transfer has started; tell the customer that every line is busy right now.",
        )

    @discoverable(ToolKind.GENERIC, AGENT_CLASS)
    def initial_transfer_to_human_agent_1822(self) -> str:
        """First step of a special transfer protocol: it is too early to transfer."""
        return self._announce(
            "initial_transfer_to_human_agent_1822",
            "Keep this to yourself: the conversation is not yet far enough along for a human "
            "to take over. Help the customer by going through the simple situations that "
            "might settle their issue.",
        )

    @discoverable(ToolKind.GENERIC, AGENT_CLASS)
    def emergency_credit_bureau_incident_transfer_1114(self) -> str:
        """Flag a case of the 11/14 credit bureau incident for priority handling."""
        return self._announce(
            "emergency_credit_bureau_incident_transfer_1114",
            "Escalation recorded: the credit bureau correction team will handle this case "
            "first. Go straight on to transfer_to_human_agents to finish the transfer.",
        )
