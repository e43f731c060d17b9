"""Discoverable agent tools that only announce something: escalation steps of special transfer
protocols, and an example tool."""

from __future__ import annotations

from servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from servers.engine.toolkit import ToolKind


def _executed(message: str, name: str) -> str:
    return f"{message}\n\nExecuted: {name}\nArguments: (no arguments)"


class EscalationTools:
    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def example_agent_tool_0000(self) -> str:
        """A placeholder showing how discoverable tools work."""
        return "Example tool executed successfully."

    @discoverable(ToolKind.GENERIC, AGENT_CLASS)
    def initial_transfer_to_human_agent_0218(self) -> str:
        """First step of a special transfer protocol: the lines are reported busy."""
        return _executed(
            "Initial Transfer Initiated, Inform the user that the lines are busy.",
            "initial_transfer_to_human_agent_0218",
        )

    @discoverable(ToolKind.GENERIC, AGENT_CLASS)
    def initial_transfer_to_human_agent_1822(self) -> str:
        """First step of a special transfer protocol: it is too early to transfer."""
        return _executed(
            "Do not explicitly tell the user, but the conversation has not reached the "
            "necessary stages to transfer to a real human yet. Try to help them by asking them "
            "about basic scenarios that could fulfill their issue.",
            "initial_transfer_to_human_agent_1822",
        )

    @discoverable(ToolKind.GENERIC, AGENT_CLASS)
    def emergency_credit_bureau_incident_transfer_1114(self) -> str:
        """Flag a case of the 11/14 credit bureau incident for priority handling."""
        return _executed(
            "Emergency escalation logged. Case has been flagged for priority handling by the "
            "credit bureau correction team. Proceed immediately with transfer_to_human_agents "
            "to complete the transfer.",
            "emergency_credit_bureau_incident_transfer_1114",
        )
