"""The bank agent's tools: customer lookups, verification logging, transfers to a human, and
the three tools through which the agent finds, unlocks and uses discoverable tools.

The discoverable tools themselves are in the `*_tools.py` mixins; this class gathers them.
Unlocks are kept in memory for the episode, never in the database.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from tau_mcp.servers.domains.banking_knowledge import ids, read_log, records
from tau_mcp.servers.domains.banking_knowledge.accounts_tools import BankAccountTools
from tau_mcp.servers.domains.banking_knowledge.card_security_tools import CardSecurityTools
from tau_mcp.servers.domains.banking_knowledge.clock import CURRENT_TIME, NOW
from tau_mcp.servers.domains.banking_knowledge.credit_card_tools import CreditCardTools
from tau_mcp.servers.domains.banking_knowledge.credit_limit_tools import CreditLimitTools
from tau_mcp.servers.domains.banking_knowledge.debit_card_tools import DebitCardTools
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, info, not_a_mapping
from tau_mcp.servers.domains.banking_knowledge.dispute_tools import DisputeTools
from tau_mcp.servers.domains.banking_knowledge.escalation_tools import EscalationTools
from tau_mcp.servers.domains.banking_knowledge.user_tools import KnowledgeUserTools
from tau_mcp.servers.engine.toolkit import EpisodeServices, ToolKind, Toolkit, tool

TransferReason = Literal[
    "fraud_or_security_concern",
    "account_closure_request",
    "deceased_account_holder",
    "legal_or_regulatory_matter",
    "account_ownership_dispute",
    "complex_billing_dispute",
    "abusive_customer_behavior",
    "third_party_inquiry",
    "technical_system_error",
    "unconfirmed_external_communication",
    "customer_demands_after_unavailable_offer_refusal",
    "kb_search_unsuccessful_customer_requests_transfer",
    "specialized_department_required",
    "accessibility_or_special_needs",
    "customer_frustrated_demands_human",
    "supervisor_request_service_complaint",
    "customer_requests_human_no_specific_reason",
    "request_completed_customer_wants_human_followup",
    "other",
]
TRANSFER_REASONS = list(get_args(TransferReason))


class KnowledgeTools(
    EscalationTools,
    DisputeTools,
    CreditCardTools,
    CreditLimitTools,
    BankAccountTools,
    DebitCardTools,
    CardSecurityTools,
    Toolkit,
):
    """The agent side of banking_knowledge (named as the reference names it: Python's messages
    for bad arguments, part of the output, say `KnowledgeTools.<tool>()`)."""

    def __init__(self, db: Any, episode: EpisodeServices | None = None) -> None:
        super().__init__(db, episode)
        # name -> when it was unlocked; lives with the episode, not in the database.
        self.unlocked: dict[str, str] = {}
        self.read_log_allowlist = read_log.allowlist(episode.task if episode else None)

    def _data_dir(self) -> Any:
        return self.episode.data_dir if self.episode is not None else None

    # --- customers ----------------------------------------------------------------------------
    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str, reason: TransferReason = "other") -> str:
        """Hand the conversation to a human agent.

        Args:
            summary: What the customer needs and what was tried.
            reason: Why the customer is transferred (one of the listed codes).
        """
        if reason not in TRANSFER_REASONS:
            return (
                f"Error: Invalid transfer reason '{reason}'. "
                f"Must be one of: {', '.join(TRANSFER_REASONS)}"
            )
        return f"Transfer successful (reason: {reason}). A human agent will assist you shortly."

    @tool(ToolKind.READ)
    def get_current_time(self) -> str:
        """The current date and time, for verification records."""
        return f"The current time is {CURRENT_TIME}."

    @tool(ToolKind.READ)
    def get_user_information_by_id(self, user_id: str) -> str:
        """A customer's profile by user id.

        Args:
            user_id: The customer's id.
        """
        return records.lookup(self.db, "users", "user_id", user_id)

    @tool(ToolKind.READ)
    def get_user_information_by_name(self, customer_name: str) -> str:
        """A customer's profile by exact full name.

        Args:
            customer_name: The customer's name, case as stored.
        """
        return records.lookup(self.db, "users", "name", customer_name)

    @tool(ToolKind.READ)
    def get_user_information_by_email(self, email: str) -> str:
        """A customer's profile by email address.

        Args:
            email: The customer's email.
        """
        return records.lookup(self.db, "users", "email", email)

    @tool(ToolKind.WRITE)
    def change_user_email(self, user_id: str, new_email: str) -> str:
        """Change a customer's email address.

        Args:
            user_id: The customer's id.
            new_email: The address to store.
        """
        users = self.db.users.data
        if user_id not in users:
            return f"Error: User with ID '{user_id}' not found."
        users[user_id]["email"] = new_email
        return f"Email updated successfully.\n  - User ID: {user_id}\n  - New Email: {new_email}"

    @tool(ToolKind.READ)
    def get_referrals_by_user(self, user_id: str) -> str:
        """The referrals a customer has made.

        Args:
            user_id: The referring customer's id.
        """
        return records.lookup(self.db, "referrals", "referrer_id", user_id)

    @tool(ToolKind.READ)
    def get_credit_card_transactions_by_user(self, user_id: str) -> str:
        """A customer's credit card transactions.

        Args:
            user_id: The customer's id.
        """
        return records.lookup(self.db, "credit_card_transaction_history", "user_id", user_id)

    @tool(ToolKind.READ)
    def get_credit_card_accounts_by_user(self, user_id: str) -> str:
        """A customer's credit card accounts (card, opening date, balance, points).

        Args:
            user_id: The customer's id.
        """
        return records.lookup(self.db, "credit_card_accounts", "user_id", user_id)

    @tool(ToolKind.WRITE)
    def log_verification(
        self,
        name: str,
        user_id: str,
        address: str,
        email: str,
        phone_number: str,
        date_of_birth: str,
        time_verified: str,
    ) -> str:
        """Record that a customer's identity was verified.

        Args:
            name: The customer's full name.
            user_id: The customer's id.
            address: The customer's address.
            email: The customer's email.
            phone_number: The customer's phone number.
            date_of_birth: Date of birth, MM/DD/YYYY.
            time_verified: When the verification happened.
        """
        record_id = ids.verification_id(user_id, time_verified)
        record = {
            "name": name,
            "user_id": user_id,
            "address": address,
            "email": email,
            "phone_number": phone_number,
            "date_of_birth": date_of_birth,
            "time_verified": time_verified,
        }
        if not records.add(self.db.verification_history, record_id, record):
            return "Failed to log verification: Record may already exist."
        return (
            f"Verification logged successfully.\n"
            f"  - User: {name} (ID: {user_id})\n"
            f"  - Verified at: {time_verified}"
        )

    # --- discoverable tools -------------------------------------------------------------------
    @tool(ToolKind.GENERIC, mutates=True)
    def give_discoverable_user_tool(
        self, discoverable_tool_name: str, arguments: str = "{}"
    ) -> str:
        """Give the customer one of their discoverable tools, with suggested arguments.

        Args:
            discoverable_tool_name: The tool's name, as the knowledge base gives it.
            arguments: The arguments for the customer to use, as a JSON object.
        """
        if not isinstance(discoverable_tool_name, str):
            raise TypeError(
                f"attribute name must be string, not '{type(discoverable_tool_name).__name__}'"
            )
        spec = KnowledgeUserTools.hidden_specs.get(discoverable_tool_name)
        if spec is None:
            return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
        try:
            suggested = json.loads(arguments)
        except json.JSONDecodeError as exc:
            return f"Error: Invalid JSON in arguments: {exc}"
        accepted = KnowledgeUserTools.parameter_names(discoverable_tool_name)
        for key in suggested:
            if key not in accepted:
                return f"Error: Unexpected parameter: {key}"
        described = info(self._data_dir(), "user", spec)
        record = {"tool_name": discoverable_tool_name, "status": "GIVEN"}
        records.add(
            self.db.user_discoverable_tools, ids.user_tool_id(discoverable_tool_name), record
        )
        return described.given_text(suggested)

    @tool(ToolKind.GENERIC, mutates=True)
    def unlock_discoverable_agent_tool(self, agent_tool_name: str) -> str:
        """Unlock one of the agent's discoverable tools named in the knowledge base.

        Args:
            agent_tool_name: The tool's name.
        """
        spec = self.hidden_specs.get(agent_tool_name)
        if spec is None:
            return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
        self.unlocked[agent_tool_name] = NOW.isoformat()
        return info(self._data_dir(), "agent", spec).unlocked_text()

    @tool(ToolKind.WRITE)
    def call_discoverable_agent_tool(self, agent_tool_name: str, arguments: str = "{}") -> str:
        """Call a discoverable tool unlocked earlier in this conversation.

        Args:
            agent_tool_name: The tool's name.
            arguments: Its arguments as a JSON object.
        """
        if agent_tool_name not in self.hidden_specs:
            return f"Error: Unknown agent tool '{agent_tool_name}'. This tool is not available."
        if agent_tool_name not in self.unlocked:
            return (
                f"Error: Tool '{agent_tool_name}' has not been unlocked. "
                f"You must first use `unlock_discoverable_agent_tool` to unlock this tool "
                f"before calling it."
            )
        try:
            # Every JSON number is a float, so ids and hashes do not depend on spelling.
            args = json.loads(arguments, parse_int=float)
        except json.JSONDecodeError as exc:
            return f"Error: Invalid JSON in arguments: {exc}"
        if not hasattr(args, "keys"):
            return f"Error: Invalid arguments: {not_a_mapping(AGENT_CLASS, agent_tool_name, args)}"
        try:
            result = getattr(self, agent_tool_name)(**args)
        except TypeError as exc:
            return f"Error: Invalid arguments: {exc}"
        spec = self.hidden_specs[agent_tool_name]
        if read_log.is_logged(agent_tool_name, spec.mutates, self.read_log_allowlist):
            record = {"tool_name": agent_tool_name, "status": "CALLED"}
            records.add(
                self.db.agent_discoverable_tools, ids.agent_tool_id(agent_tool_name), record
            )
        return result

    @tool(ToolKind.READ)
    def list_discoverable_agent_tools(self) -> str:
        """The discoverable tools called so far in this conversation."""
        return f"Your called agent tools:\n{records.query(self.db, 'agent_discoverable_tools')}"
