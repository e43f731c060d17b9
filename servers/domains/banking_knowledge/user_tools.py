"""The customer's tools: applying for a card, referring someone, paying with a card, asking
for a human, and using the discoverable tools the agent gave them.

They act on the same database as the agent's tools (the domain has no user database).
"""

from __future__ import annotations

import inspect
import json
from functools import cache

from tau_mcp.servers.domains.banking_knowledge import ids, records
from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import USER_CLASS, not_a_mapping
from tau_mcp.servers.domains.banking_knowledge.products import APPLICATION_CARDS, CARD_REWARDS
from tau_mcp.servers.domains.banking_knowledge.user_discoverable_tools import UserDiscoverableTools
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, tool


class KnowledgeUserTools(UserDiscoverableTools, Toolkit):
    """The user side of banking_knowledge (named as the reference names it: Python's messages
    for bad arguments, part of the output, say `KnowledgeUserTools.<tool>()`)."""

    @classmethod
    @cache
    def parameter_names(cls, tool_name: str) -> frozenset[str]:
        """The parameters of a tool's method, `self` included."""
        return frozenset(inspect.signature(getattr(cls, tool_name)).parameters)

    @classmethod
    @cache
    def _required(cls, tool_name: str) -> tuple[str, ...]:
        parameters = inspect.signature(getattr(cls, tool_name)).parameters.values()
        return tuple(
            p.name for p in parameters if p.name != "self" and p.default is inspect.Parameter.empty
        )

    @tool(ToolKind.WRITE)
    def apply_for_credit_card(
        self,
        card_type: str,
        customer_name: str,
        annual_income: float,
        rho_bank_subscription: bool = False,
    ) -> str:
        """Apply for one of the bank's credit cards.

        Args:
            card_type: The card's name.
            customer_name: Your full legal name.
            annual_income: Your yearly income in dollars.
            rho_bank_subscription: Whether you subscribe to Rho-Bank+.
        """
        if card_type not in APPLICATION_CARDS:
            return f"Error: Invalid card_type '{card_type}'. Must be one of: {APPLICATION_CARDS}"
        try:
            # Stored as a float whatever the spelling, so the id does not depend on it.
            annual_income = float(annual_income)
        except (TypeError, ValueError):
            return "Error: Invalid annual_income. Must be a number."
        application_id = ids.application_id(
            card_type, customer_name, annual_income, rho_bank_subscription
        )
        record = {
            "application_id": application_id,
            "card_type": card_type,
            "customer_name": customer_name,
            "annual_income": annual_income,
            "rho_bank_subscription": rho_bank_subscription,
            "status": "PENDING",
            "date": TODAY,
        }
        if not records.add(self.db.credit_card_applications, application_id, record):
            return f"Failed to submit application: Record ID '{application_id}' may already exist."
        return (
            "Credit card application submitted:\n"
            "Your application has been successfully submitted. "
            "You will receive a decision within 5-7 business days via email."
        )

    @tool(ToolKind.WRITE)
    def submit_referral(self, user_id: str, account_type: str) -> str:
        """Refer someone to open an account.

        Args:
            user_id: Your user id (the referrer).
            account_type: The kind of account you refer them to.
        """
        referral_id = ids.referral_id(user_id, account_type)
        record = {
            "referral_id": referral_id,
            "referrer_id": user_id,
            "referred_account_type": account_type,
            "referral_status": "NO_PROGRESS",
            "date": TODAY,
        }
        if not records.add(self.db.referrals, referral_id, record):
            return f"Failed to submit referral: Record ID '{referral_id}' may already exist."
        return (
            f"Referral request submitted successfully!\n"
            f"  - Referral ID: {referral_id}\n"
            f"  - Referrer ID: {user_id}\n"
            f"  - Account Type: {account_type}\n"
            f"  - Status: NO_PROGRESS\n"
            f"  - Date: {TODAY}\n\n"
            f"Share your referral ID with the person you're referring. "
            f"They will need to use this when applying for their account."
        )

    @tool(ToolKind.WRITE)
    def call_discoverable_user_tool(
        self, discoverable_tool_name: str, arguments: str = "{}"
    ) -> str:
        """Use a tool the agent gave you, with the arguments the agent told you.

        Args:
            discoverable_tool_name: The tool's name.
            arguments: Its arguments as a JSON object.
        """
        name = discoverable_tool_name
        if name not in self.hidden_specs:
            return f"Error: Unknown discoverable tool '{name}'."
        try:
            # Every JSON number is a float, so ids and hashes do not depend on spelling.
            args = json.loads(arguments, parse_int=float)
        except json.JSONDecodeError as exc:
            return f"Error: Invalid JSON in arguments: {exc}"
        for parameter in self._required(name):
            if parameter not in args:
                return f"Error: Missing required parameter: {parameter}"
        accepted = self.parameter_names(name) - {"self"}
        for key in args:
            if key not in accepted:
                return f"Error: Unexpected parameter: {key}"
        if not hasattr(args, "keys"):
            return (
                f"Error: Invalid arguments for tool '{name}': "
                f"{not_a_mapping(USER_CLASS, name, args)}"
            )
        try:
            return getattr(self, name)(**args)
        except TypeError as exc:
            return f"Error: Invalid arguments for tool '{name}': {exc}"

    @tool(ToolKind.READ)
    def list_discoverable_user_tools(self) -> str:
        """The tools the agent has given you so far."""
        return (
            f"Tools given to you by the agent:\n{records.query(self.db, 'user_discoverable_tools')}"
        )

    @tool(ToolKind.WRITE)
    def request_human_agent_transfer(self) -> str:
        """Ask to speak with a human agent; every request is logged."""
        earlier = records.query(self.db, "human_transfer_requests")
        if not records.found_any(earlier):
            number = 1
        else:
            number = earlier.count("request_id") + 1
        request_id = f"transfer_request_{number}"
        record = {
            "request_id": request_id,
            "request_number": number,
            "requested_at": TODAY,
            "status": "PENDING",
        }
        records.add(self.db.human_transfer_requests, request_id, record)
        return f"Transfer request #{number} submitted.\nThe agent will process your request."

    @tool(ToolKind.WRITE)
    def submit_transaction(
        self,
        user_id: str,
        credit_card_type: str,
        merchant_name: str,
        amount: float,
        category: str,
    ) -> str:
        """Pay with one of your credit cards.

        Args:
            user_id: Your user id.
            credit_card_type: The card used, e.g. "Gold Rewards Card".
            merchant_name: Where you paid.
            amount: The amount in dollars, e.g. 127.43.
            category: What kind of purchase, e.g. "Travel" or "Groceries".
        """
        if credit_card_type not in CARD_REWARDS:
            return (
                f"Error: Unknown credit card type '{credit_card_type}'. "
                f"Available types: {list(CARD_REWARDS)}"
            )
        transaction_id = ids.transaction_id(
            user_id, credit_card_type, merchant_name, amount, category
        )
        rates = CARD_REWARDS[credit_card_type]
        rate = rates.get(category, rates["default"])
        points = int(amount * rate)
        record = {
            "transaction_id": transaction_id,
            "user_id": user_id,
            "credit_card_type": credit_card_type,
            "merchant_name": merchant_name,
            "transaction_amount": f"${amount:.2f}",
            "transaction_date": TODAY,
            "category": category,
            "status": "COMPLETED",
            "rewards_earned": f"{points} points",
        }
        if not records.add(self.db.credit_card_transaction_history, transaction_id, record):
            return f"Failed to submit transaction: Record ID '{transaction_id}' may already exist."
        return (
            f"Transaction submitted successfully!\n"
            f"  - Transaction ID: {transaction_id}\n"
            f"  - User ID: {user_id}\n"
            f"  - Card Type: {credit_card_type}\n"
            f"  - Merchant: {merchant_name}\n"
            f"  - Amount: ${amount:.2f}\n"
            f"  - Category: {category}\n"
            f"  - Date: {TODAY}\n"
            f"  - Rewards Earned: {points} points ({rate}% cashback rate)\n"
        )
