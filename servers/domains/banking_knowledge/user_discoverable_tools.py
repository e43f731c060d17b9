"""The customer's discoverable tools: actions the customer takes themselves (in the bank's app,
on the website) once the agent has given them the tool.

Each one first checks it was given, then logs the call, then acts; a call of a tool never
given changes nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tau_mcp.servers.domains.banking_knowledge import ids, records
from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import USER_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.texts import shown_arguments
from tau_mcp.servers.engine.toolkit import ToolKind


class UserDiscoverableTools:
    db: Any

    def _not_given(self, tool_name: str) -> str | None:
        found = records.lookup(self.db, "user_discoverable_tools", "tool_name", tool_name)
        if "No records found" in found:
            return (
                f"Error: Tool '{tool_name}' has not been given to you by the agent. "
                f"The agent must first use `give_discoverable_user_tool` to give this tool to "
                f"you."
            )
        return None

    def _log_call(self, tool_name: str, arguments: dict[str, Any]) -> None:
        record = {
            "tool_name": tool_name,
            "arguments": arguments,
            "called_at": TODAY,
            "status": "CALLED",
        }
        call_id = ids.user_tool_call_id(tool_name, arguments)
        records.add(self.db.user_discoverable_tool_calls, call_id, record)

    @discoverable(ToolKind.WRITE, USER_CLASS)
    def submit_cash_back_dispute_0589(self, user_id: str, transaction_id: str) -> str:
        """Dispute the cash back credited for one transaction.

        Args:
            user_id (string): Your user id.
            transaction_id (string): The transaction whose cash back is wrong.
        """
        name = "submit_cash_back_dispute_0589"
        error = self._not_given(name)
        if error:
            return error
        arguments = {"user_id": user_id, "transaction_id": transaction_id}
        self._log_call(name, arguments)
        dispute_id = ids.dispute_id(user_id, transaction_id)
        auto_resolve = False
        settings_table = self.db.task_config.data
        if settings_table:
            settings = records.peek(settings_table, "dispute_settings") or {}
            auto_resolve = settings.get("auto_resolve_disputes", False)
        record: dict[str, Any] = {
            "dispute_id": dispute_id,
            "user_id": user_id,
            "transaction_id": transaction_id,
            "submitted_at": TODAY,
        }
        if auto_resolve:
            record.update(status="RESOLVED", resolution="APPROVED")
            status = (
                "Status: RESOLVED - The dispute has been reviewed and approved. The transaction "
                "rewards need to be updated."
            )
        else:
            record["status"] = "SUBMITTED"
            status = "Status: SUBMITTED - Your dispute has been queued for review."
        stored = records.add(self.db.cash_back_disputes, dispute_id, record)
        text = (
            f"Cash back dispute submitted successfully. Your case has been queued for review.\n\n"
            f"Executed: {name}\nArguments: {shown_arguments(arguments)}\n"
        )
        if stored:
            return text + f"Dispute ID: {dispute_id}\n{status}"
        return text + "Note: Dispute may have already been submitted for this transaction."

    @discoverable(ToolKind.WRITE, USER_CLASS)
    def get_referral_link(self, user_id: str, card_name: str) -> str:
        """Make a link that refers someone to one of the bank's credit cards.

        Args:
            user_id (string): Your user id (the referrer).
            card_name (string): The card to refer to, e.g. 'Gold Rewards Card'.
        """
        name = "get_referral_link"
        error = self._not_given(name)
        if error:
            return error
        arguments = {"user_id": user_id, "card_name": card_name}
        self._log_call(name, arguments)
        referral_id = ids.referral_link_id(user_id, card_name)
        record = {
            "referral_id": referral_id,
            "referrer_id": user_id,
            "referred_account_type": card_name,
            "referral_status": "NO_PROGRESS",
            "date": TODAY,
        }
        stored = records.add(self.db.referrals, referral_id, record)
        text = (
            f"Referral link generated successfully. Share this link with the person you want to "
            f"refer.\n\nExecuted: {name}\nArguments: {shown_arguments(arguments)}\n"
        )
        if stored:
            return (
                text + f"Referral ID: {referral_id}\n"
                f"Referral link: https://rhobank.com/refer/{referral_id}"
            )
        return text + "Note: A referral link for this card may have already been generated."

    @discoverable(ToolKind.READ, USER_CLASS)
    def get_card_last_4_digits(self, credit_card_account_id: str) -> str:
        """Show the last four digits of one of your credit cards.

        Args:
            credit_card_account_id (string): The card account, e.g. 'cc_76ad9cc60e_gold'.
        """
        name = "get_card_last_4_digits"
        error = self._not_given(name)
        if error:
            return error
        arguments = {"credit_card_account_id": credit_card_account_id}
        self._log_call(name, arguments)
        found = records.lookup(
            self.db, "credit_card_accounts", "account_id", credit_card_account_id
        )
        if not records.found_any(found):
            return f"Error: Credit card account '{credit_card_account_id}' not found."
        digest = hashlib.sha256(f"card_last4:{credit_card_account_id}".encode()).hexdigest()
        last_4 = "".join(c for c in digest if c.isdigit())[:4].ljust(4, "0")
        return (
            f"Card information retrieved successfully.\n\nExecuted: {name}\n"
            f"Arguments: {shown_arguments(arguments)}\nLast 4 digits of card: {last_4}"
        )

    @discoverable(ToolKind.WRITE, USER_CLASS)
    def deposit_check_3847(self, account_id: str, check_amount: float) -> str:
        """Deposit a check into your checking or savings account from the mobile app.

        Args:
            account_id (string): The account to deposit into.
            check_amount (number): The check's amount in dollars.
        """
        name = "deposit_check_3847"
        error = self._not_given(name)
        if error:
            return error
        arguments = {"account_id": account_id, "check_amount": check_amount}
        self._log_call(name, arguments)
        try:
            amount = float(check_amount)
        except (ValueError, TypeError):
            return f"Error: Invalid check amount '{check_amount}'. Must be a number."
        if amount <= 0:
            return "Error: Check amount must be positive."
        accounts = self.db.accounts.data
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Account '{account_id}' is not active."
        previous = records.balance(account)
        new_balance = previous + amount
        account["current_holdings"] = f"${new_balance:.2f}"
        return (
            f"Check deposited successfully. Funds will be available according to your "
            f"account's deposit policy.\n\n"
            f"Executed: {name}\n"
            f"Arguments: {shown_arguments(arguments)}\n"
            f"Check deposit processed!\n"
            f"  - Account: {account_id}\n"
            f"  - Check Amount: ${amount:.2f}\n"
            f"  - Previous Balance: ${previous:.2f}\n"
            f"  - New Balance: ${new_balance:.2f}"
        )
