"""Discoverable agent tools for credit card accounts: rewards corrections, replacements,
closures and their reasons, statement credits, account flags, payments from checking."""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.domains.banking_knowledge import ids, records
from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.texts import history, missing, shown_arguments, title
from tau_mcp.servers.engine.toolkit import ToolKind

REPLACEMENT_REASONS = ["fraud_suspected", "lost", "stolen", "damaged", "expired", "other"]
CLOSURE_REASONS = [
    "annual_fee",
    "not_using_card",
    "found_better_card",
    "unhappy_with_rewards",
    "simplifying_finances",
    "negative_experience",
    "other",
]
STATEMENT_CREDIT_REASONS = [
    "goodwill_adjustment",
    "promotional_credit",
    "annual_fee_reversal",
    "late_fee_reversal",
    "interest_charge_reversal",
    "dispute_resolution",
    "price_match",
    "retention_offer",
    "error_correction",
    "other",
]
FLAG_TYPES = ["annual_fee_waived", "promotional_apr", "rewards_bonus", "other"]
FLAG_REASONS = ["retention_offer", "loyalty_benefit", "promotional", "error_correction", "other"]


def dollars(value: Any) -> float:
    """A dollar amount stored as text ('$1,250.00'); 0 when it is not one."""
    try:
        return float(str(value).replace("$", "").replace(",", ""))
    except (ValueError, TypeError):
        return 0.0


class CreditCardTools:
    db: Any

    def _card_account_missing(self, account_id: Any) -> str | None:
        """The not-found error when no credit card account has this `account_id` field."""
        found = records.lookup(self.db, "credit_card_accounts", "account_id", account_id)
        if not records.found_any(found):
            return f"Error: Credit card account '{account_id}' not found."
        return None

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def update_transaction_rewards_3847(self, transaction_id: str, new_rewards_earned: str) -> str:
        """Correct the rewards recorded on a credit card transaction.

        Args:
            transaction_id (string): The transaction to correct.
            new_rewards_earned (string): The corrected rewards, e.g. '6300 points'.
        """
        if not transaction_id or not new_rewards_earned:
            return "Error: Missing required parameters."
        transactions = self.db.credit_card_transaction_history.data
        if transaction_id not in transactions:
            return f"Error: Transaction '{transaction_id}' not found."
        transactions[transaction_id]["rewards_earned"] = new_rewards_earned
        arguments = {"transaction_id": transaction_id, "new_rewards_earned": new_rewards_earned}
        return (
            f"Transaction rewards updated successfully.\n\n"
            f"Executed: update_transaction_rewards_3847\n"
            f"Arguments: {shown_arguments(arguments)}\n"
            f"Transaction updated:\n"
            f"  - Transaction ID: {transaction_id}\n"
            f"  - New Rewards: {new_rewards_earned}"
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def order_replacement_credit_card_7291(
        self,
        credit_card_account_id: str,
        user_id: str,
        shipping_address: str,
        reason: str,
        expedited_shipping: bool = False,
    ) -> str:
        """Order a replacement credit card; the current card is cancelled at once.

        Args:
            credit_card_account_id (string): The card account to replace the card of.
            user_id (string): The customer's id.
            shipping_address (string): Where to send the new card.
            reason (string): 'fraud_suspected', 'lost', 'stolen', 'damaged', 'expired' or
                'other'.
            expedited_shipping (boolean, optional): Ship in 2-3 business days instead of 7-10.
        """
        if not credit_card_account_id or not user_id or not shipping_address or not reason:
            return (
                "Error: Missing required parameters (credit_card_account_id, user_id, "
                "shipping_address, reason)."
            )
        if reason not in REPLACEMENT_REASONS:
            return f"Error: Invalid reason. Must be one of: {REPLACEMENT_REASONS}"
        error = self._card_account_missing(credit_card_account_id)
        if error:
            return error
        order_id = ids.credit_card_order_id(credit_card_account_id, user_id, reason)
        order = {
            "order_id": order_id,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "shipping_address": shipping_address,
            "reason": reason,
            "expedited_shipping": expedited_shipping,
            "order_date": TODAY,
            "status": "ORDERED",
            "old_card_cancelled": True,
        }
        if not records.add(self.db.credit_card_orders, order_id, order):
            return "Error: Order may have already been placed for this card replacement."
        accounts = self.db.credit_card_accounts.data
        if credit_card_account_id in accounts:
            accounts[credit_card_account_id]["status"] = "CLOSED"
            accounts[credit_card_account_id]["closed_date"] = TODAY
        lines = [
            f"Order ID: {order_id}",
            f"Card Account: {credit_card_account_id}",
            f"Reason: {title(reason)}",
            f"Shipping Address: {shipping_address}",
            f"Shipping Method: {'Expedited' if expedited_shipping else 'Standard'}",
            f"Expected Delivery: "
            f"{'2-3 business days' if expedited_shipping else '7-10 business days'}",
            "",
            "The old card has been cancelled for security. The new card will have the same "
            "account number but a new card number and CVV.",
        ]
        return "\n".join(lines)

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_pending_replacement_orders_5765(self, credit_card_account_id: str) -> str:
        """Replacement card orders of a credit card account.

        Args:
            credit_card_account_id (string): The card account.
        """
        if not credit_card_account_id:
            return missing("credit_card_account_id")
        return history(
            "Pending replacement orders check completed.",
            "get_pending_replacement_orders_5765",
            f"Replacement orders for credit card account {credit_card_account_id}:",
            records.lookup(
                self.db, "credit_card_orders", "credit_card_account_id", credit_card_account_id
            ),
            "\nNo pending replacement orders found for this credit card account.",
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def log_credit_card_closure_reason_4521(
        self, credit_card_account_id: str, user_id: str, closure_reason: str
    ) -> str:
        """Record why a customer wants to close a credit card account.

        Args:
            credit_card_account_id (string): The card account.
            user_id (string): The customer's id.
            closure_reason (string): One of the accepted closure reasons.
        """
        if not credit_card_account_id or not user_id or not closure_reason:
            return "Error: Missing required parameters."
        if closure_reason not in CLOSURE_REASONS:
            return f"Error: Invalid closure_reason. Must be one of: {CLOSURE_REASONS}"
        record_id = ids.closure_reason_id(credit_card_account_id, user_id)
        record = {
            "record_id": record_id,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "closure_reason": closure_reason,
            "logged_at": TODAY,
            "status": "LOGGED",
        }
        records.add(self.db.credit_card_closure_reasons, record_id, record)
        arguments = {
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "closure_reason": closure_reason,
        }
        return (
            f"Closure reason logged successfully.\n\n"
            f"Executed: log_credit_card_closure_reason_4521\n"
            f"Arguments: {shown_arguments(arguments)}\n"
            f"Closure reason '{closure_reason}' logged for account {credit_card_account_id}."
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_closure_reason_history_8293(self, credit_card_account_id: str) -> str:
        """Closure reasons logged for a credit card account.

        Args:
            credit_card_account_id (string): The card account.
        """
        if not credit_card_account_id:
            return missing("credit_card_account_id")
        return history(
            "Closure reason history retrieved successfully.",
            "get_closure_reason_history_8293",
            f"Closure reason history for credit card account {credit_card_account_id}:",
            records.lookup(
                self.db,
                "credit_card_closure_reasons",
                "credit_card_account_id",
                credit_card_account_id,
            ),
            "\nNo closure reason records found for this credit card account.",
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def apply_statement_credit_8472(
        self, user_id: str, credit_card_account_id: str, amount: float, reason: str
    ) -> str:
        """Credit an amount to a credit card account's statement.

        Args:
            user_id (string): The customer's id.
            credit_card_account_id (string): The card account.
            amount (number): The credit in dollars.
            reason (string): One of the accepted statement credit reasons.
        """
        if not user_id or not credit_card_account_id or amount is None or not reason:
            return (
                "Error: Missing required parameters (user_id, credit_card_account_id, amount, "
                "reason)."
            )
        if amount <= 0:
            return "Error: Credit amount must be positive."
        if reason not in STATEMENT_CREDIT_REASONS:
            return f"Error: Invalid reason. Must be one of: {STATEMENT_CREDIT_REASONS}"
        error = self._card_account_missing(credit_card_account_id)
        if error:
            return error
        transaction_id = ids.transaction_id(
            user_id, "STATEMENT_CREDIT", reason, amount, "Statement Credit"
        )
        record = {
            "transaction_id": transaction_id,
            "user_id": user_id,
            "credit_card_account_id": credit_card_account_id,
            "credit_card_type": "N/A",
            "merchant_name": "Rho-Bank Statement Credit",
            "transaction_amount": f"-${amount:.2f}",
            "transaction_date": TODAY,
            "category": "Statement Credit",
            "status": "COMPLETED",
            "rewards_earned": "0 points",
            "credit_reason": reason,
        }
        if not records.add(self.db.credit_card_transaction_history, transaction_id, record):
            return (
                f"Error: Failed to apply statement credit. Transaction ID '{transaction_id}' "
                f"may already exist."
            )
        return (
            f"Statement credit applied successfully.\n\n"
            f"Executed: apply_statement_credit_8472\n"
            f"  - Transaction ID: {transaction_id}\n"
            f"  - User ID: {user_id}\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - Credit Amount: ${amount:.2f}\n"
            f"  - Reason: {title(reason)}\n"
            f"  - Date: {TODAY}"
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def apply_credit_card_account_flag_6147(
        self,
        credit_card_account_id: str,
        user_id: str,
        flag_type: str,
        expiration_date: str,
        reason: str,
    ) -> str:
        """Put a flag (fee waiver, promotional rate, bonus...) on a credit card account.

        Args:
            credit_card_account_id (string): The card account.
            user_id (string): The customer's id.
            flag_type (string): 'annual_fee_waived', 'promotional_apr', 'rewards_bonus' or
                'other'.
            expiration_date (string): When the flag ends, MM/DD/YYYY.
            reason (string): 'retention_offer', 'loyalty_benefit', 'promotional',
                'error_correction' or 'other'.
        """
        if (
            not credit_card_account_id
            or not user_id
            or not flag_type
            or not expiration_date
            or not reason
        ):
            return (
                "Error: Missing required parameters (credit_card_account_id, user_id, "
                "flag_type, expiration_date, reason)."
            )
        if flag_type not in FLAG_TYPES:
            return f"Error: Invalid flag_type. Must be one of: {FLAG_TYPES}"
        if reason not in FLAG_REASONS:
            return f"Error: Invalid reason. Must be one of: {FLAG_REASONS}"
        error = self._card_account_missing(credit_card_account_id)
        if error:
            return error
        flag_id = ids.account_flag_id(credit_card_account_id, flag_type, expiration_date)
        record = {
            "flag_id": flag_id,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "flag_type": flag_type,
            "effective_date": TODAY,
            "expiration_date": expiration_date,
            "reason": reason,
            "applied_at": TODAY,
            "status": "ACTIVE",
        }
        if not records.add(self.db.credit_card_account_flags, flag_id, record):
            return f"Error: Failed to apply account flag. Flag ID '{flag_id}' may already exist."
        return (
            f"Account flag applied successfully!\n"
            f"  - Flag ID: {flag_id}\n"
            f"  - Account: {credit_card_account_id}\n"
            f"  - User ID: {user_id}\n"
            f"  - Flag Type: {title(flag_type)}\n"
            f"  - Effective Date: {TODAY}\n"
            f"  - Expiration Date: {expiration_date}\n"
            f"  - Reason: {title(reason)}"
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def close_credit_card_account_7834(self, credit_card_account_id: str, user_id: str) -> str:
        """Close a credit card account for good.

        Args:
            credit_card_account_id (string): The card account.
            user_id (string): The customer's id.
        """
        if not credit_card_account_id or not user_id:
            return "Error: Missing required parameters (credit_card_account_id, user_id)."
        error = self._card_account_missing(credit_card_account_id)
        if error:
            return error
        accounts = self.db.credit_card_accounts.data
        if credit_card_account_id not in accounts:
            return f"Error: Failed to close credit card account '{credit_card_account_id}'."
        account = accounts[credit_card_account_id]
        account["status"] = "CLOSED"
        account["closed_date"] = TODAY
        account["closed_by"] = user_id
        arguments = {"credit_card_account_id": credit_card_account_id, "user_id": user_id}
        return (
            f"Credit card account closed successfully.\n\n"
            f"Executed: close_credit_card_account_7834\n"
            f"Arguments: {shown_arguments(arguments)}\n"
            f"Account {credit_card_account_id} has been closed."
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def pay_credit_card_from_checking_9182(
        self,
        user_id: str,
        checking_account_id: str,
        credit_card_account_id: str,
        amount: float,
    ) -> str:
        """Pay a credit card balance from the customer's checking account.

        Args:
            user_id (string): The customer's id.
            checking_account_id (string): The checking account to take the money from.
            credit_card_account_id (string): The card account to pay.
            amount (number): The payment in dollars, above zero.
        """
        if not user_id or not checking_account_id or not credit_card_account_id or amount is None:
            return (
                "Error: Missing required parameters (user_id, checking_account_id, "
                "credit_card_account_id, amount)."
            )
        try:
            amount = float(amount)
            if amount <= 0:
                return "Error: Payment amount must be a positive number."
        except (ValueError, TypeError):
            return "Error: Invalid payment amount. Must be a positive number."
        accounts = self.db.accounts.data
        if checking_account_id not in accounts:
            return f"Error: Checking account '{checking_account_id}' not found."
        checking = accounts[checking_account_id]
        if checking.get("user_id") != user_id:
            return (
                f"Error: Checking account '{checking_account_id}' does not belong to user "
                f"'{user_id}'."
            )
        if checking.get("class") != "checking":
            return f"Error: Account '{checking_account_id}' is not a checking account."
        available = records.balance(checking)
        if amount > available:
            return (
                f"Error: Insufficient funds in checking account. Available balance: "
                f"${available:.2f}, requested payment: ${amount:.2f}."
            )
        cards = self.db.credit_card_accounts.data
        if credit_card_account_id not in cards:
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        card = cards[credit_card_account_id]
        if card.get("user_id") != user_id:
            return (
                f"Error: Credit card account '{credit_card_account_id}' does not belong to "
                f"user '{user_id}'."
            )
        owed = dollars(card.get("current_balance", "$0.00"))
        if amount > owed:
            return (
                f"Error: Payment amount (${amount:.2f}) exceeds credit card balance "
                f"(${owed:.2f}). Please specify an amount up to the outstanding balance."
            )
        new_checking = available - amount
        new_owed = owed - amount
        checking["current_holdings"] = f"{new_checking:.2f}"
        card["current_balance"] = f"${new_owed:.2f}"
        return (
            f"Payment processed successfully!\n"
            f"  - Payment Amount: ${amount:.2f}\n"
            f"  - From Checking Account: {checking_account_id}\n"
            f"  - To Credit Card Account: {credit_card_account_id}\n"
            f"  - New Checking Balance: ${new_checking:.2f}\n"
            f"  - New Credit Card Balance: ${new_owed:.2f}\n"
            f"The payment has been applied immediately."
        )
