"""Discoverable agent tools for credit limit increases: requests, their history, the payment
history they are judged on, and the decision."""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.domains.banking_knowledge import ids, records
from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.credit_card_tools import dollars
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.texts import history, missing
from tau_mcp.servers.engine.toolkit import ToolKind

DENIAL_REASONS = [
    "insufficient_account_age",
    "cooldown_period_active",
    "pending_disputes",
    "pending_replacement_card",
    "past_due_balance",
    "high_utilization",
    "insufficient_payment_history",
    "requested_amount_exceeds_limit",
    "other",
]
OPEN_DISPUTE_STATES = ["SUBMITTED", "UNDER_REVIEW", "PENDING"]
OPEN_ORDER_STATES = ["PENDING", "PROCESSING", "SHIPPED"]
BAD_STANDING = ["PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED"]


class CreditLimitTools:
    db: Any

    def _owned_card(self, account_id: Any, user_id: Any) -> tuple[str | None, Any]:
        """(error, the customer's card account record to change)."""
        cards = self.db.credit_card_accounts.data
        if account_id not in cards:
            return f"Error: Credit card account '{account_id}' not found.", None
        card = cards[account_id]
        if card.get("user_id") != user_id:
            return (
                f"Error: Credit card account '{account_id}' does not belong to user '{user_id}'.",
                None,
            )
        return None, card

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def submit_credit_limit_increase_request_7392(
        self, credit_card_account_id: str, user_id: str, requested_increase_amount: int
    ) -> str:
        """Submit a request to raise a credit card's limit.

        Args:
            credit_card_account_id (string): The card account.
            user_id (string): The customer's id.
            requested_increase_amount (integer): The increase in whole dollars.
        """
        if not credit_card_account_id or not user_id or requested_increase_amount is None:
            return "Error: Missing required parameters."
        try:
            amount = float(requested_increase_amount)
        except (TypeError, ValueError):
            return "Error: Invalid requested_increase_amount. Must be a whole number."
        if not amount.is_integer():
            return "Error: Invalid requested_increase_amount. Must be a whole number of dollars."
        increase = int(amount)
        if increase <= 0:
            return "Error: Requested increase amount must be positive."
        error, _ = self._owned_card(credit_card_account_id, user_id)
        if error:
            return error
        request_id = ids.credit_limit_request_id(credit_card_account_id, user_id, increase)
        record = {
            "request_id": request_id,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "requested_increase_amount": increase,
            "submitted_at": TODAY,
            "status": "PENDING",
        }
        if not records.add(self.db.credit_limit_increase_requests, request_id, record):
            return "Error: A similar request may already exist."
        return (
            f"Credit limit increase request submitted successfully.\n\n"
            f"Executed: submit_credit_limit_increase_request_7392\n"
            f"  - Request ID: {request_id}\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Requested Increase: ${increase:,}\n"
            f"  - Status: PENDING"
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_credit_limit_increase_history_4829(self, credit_card_account_id: str) -> str:
        """Earlier credit limit increase requests of a card account, with their outcome.

        Args:
            credit_card_account_id (string): The card account.
        """
        if not credit_card_account_id:
            return missing("credit_card_account_id")
        return history(
            "Credit limit increase history retrieved.",
            "get_credit_limit_increase_history_4829",
            f"Credit limit increase history for account {credit_card_account_id}:",
            records.lookup(
                self.db,
                "credit_limit_increase_requests",
                "credit_card_account_id",
                credit_card_account_id,
            ),
            "\nNo credit limit increase requests found for this account.",
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_payment_history_6183(self, credit_card_account_id: str, months: int) -> str:
        """The latest payments on a card account, most recent first.

        Args:
            credit_card_account_id (string): The card account.
            months (integer): How many months to show.
        """
        if not credit_card_account_id or months is None:
            return "Error: Missing required parameters (credit_card_account_id, months)."
        try:
            months = int(months)
            if months <= 0:
                return "Error: months must be a positive integer."
        except (ValueError, TypeError):
            return "Error: Invalid months value. Must be a positive integer."
        payments = [
            payment
            for payment in self.db.payment_history.data.values()
            if payment.get("credit_card_account_id") == credit_card_account_id
        ]
        if not payments:
            return f"No payment history found for account '{credit_card_account_id}'."
        payments.sort(key=lambda payment: payment.get("payment_date") or "", reverse=True)
        payments = payments[:months]
        on_time = 0
        for payment in payments:
            if payment.get("status") != "ON_TIME":
                break
            on_time += 1
        lines = [
            f"Payment history for account '{credit_card_account_id}' (last {months} months):",
            f"Consecutive on-time payments: {on_time}",
        ]
        lines.extend(
            f"\n  - Payment Date: {payment.get('payment_date')}\n"
            f"    Amount: {payment.get('amount')}\n"
            f"    Status: {payment.get('status')}"
            for payment in payments
        )
        return "\n".join(lines)

    def _blocks_increase(self, card: Any, account_id: Any, user_id: Any) -> bool:
        """An open dispute of the customer, an open replacement order of the card, or an
        account in bad standing rules an increase out."""
        disputes = self.db.transaction_disputes.data
        if disputes:
            for dispute in disputes.values():
                if (
                    dispute.get("user_id") == user_id
                    and dispute.get("status") in OPEN_DISPUTE_STATES
                ):
                    return True
        orders = self.db.credit_card_orders.data
        if orders:
            for order in orders.values():
                if (
                    order.get("credit_card_account_id") == account_id
                    and order.get("status") in OPEN_ORDER_STATES
                ):
                    return True
        return card.get("account_status", "").upper() in BAD_STANDING

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def approve_credit_limit_increase_5847(
        self, credit_card_account_id: str, user_id: str, new_credit_limit: int
    ) -> str:
        """Approve and apply a new credit limit.

        Args:
            credit_card_account_id (string): The card account.
            user_id (string): The customer's id.
            new_credit_limit (integer): The new total limit in dollars.
        """
        if not credit_card_account_id or not user_id or new_credit_limit is None:
            return "Error: Missing required parameters."
        error, card = self._owned_card(credit_card_account_id, user_id)
        if error:
            return error
        if self._blocks_increase(card, credit_card_account_id, user_id):
            return "Error: Credit limit increase request cannot be approved at this time."
        previous = dollars(card.get("credit_limit", "$0.00"))
        new_limit = float(new_credit_limit)
        card["credit_limit"] = f"${new_limit:.2f}"
        increase = new_limit - previous
        request_id = ids.credit_limit_request_id(credit_card_account_id, user_id, increase)
        record = {
            "request_id": request_id,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "previous_limit": f"${previous:.2f}",
            "new_limit": f"${new_limit:.2f}",
            "increase_amount": f"${increase:.2f}",
            "decision_date": TODAY,
            "status": "APPROVED",
        }
        records.add(self.db.credit_limit_increase_requests, request_id, record)
        return (
            f"Credit limit increase approved!\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Previous Limit: ${previous:.2f}\n"
            f"  - New Limit: ${new_limit:.2f}\n"
            f"  - Increase: ${increase:.2f}\n"
            f"  - Effective Date: {TODAY}\n"
            f"The customer will receive a confirmation email."
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def deny_credit_limit_increase_5848(
        self, credit_card_account_id: str, user_id: str, denial_reason: str
    ) -> str:
        """Record that a credit limit increase was denied, and why.

        Args:
            credit_card_account_id (string): The card account.
            user_id (string): The customer's id.
            denial_reason (string): One of the accepted denial reasons.
        """
        if not credit_card_account_id or not user_id or not denial_reason:
            return "Error: Missing required parameters."
        if denial_reason not in DENIAL_REASONS:
            return f"Error: Invalid denial_reason. Must be one of: {', '.join(DENIAL_REASONS)}"
        if credit_card_account_id not in self.db.credit_card_accounts.data:
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        request_id = ids.credit_limit_request_id(credit_card_account_id, user_id, 0.0)
        record = {
            "request_id": request_id,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "denial_reason": denial_reason,
            "decision_date": TODAY,
            "status": "DENIED",
        }
        records.add(self.db.credit_limit_increase_requests, request_id, record)
        return (
            f"Credit limit increase request denied.\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Denial Reason: {denial_reason}\n"
            f"  - Date: {TODAY}\n"
            f"The customer will receive a notification explaining the denial."
        )
