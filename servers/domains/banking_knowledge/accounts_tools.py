"""Discoverable agent tools for bank accounts: opening and closing them, transfers, credits,
interest discrepancy reports and transaction history."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tau_mcp.servers.domains.banking_knowledge import records
from tau_mcp.servers.domains.banking_knowledge.clock import NOW, TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.ids import hex_id
from tau_mcp.servers.domains.banking_knowledge.texts import missing
from tau_mcp.servers.engine.toolkit import ToolKind

ACCOUNT_TYPES = ["checking", "savings", "business_checking", "business_savings"]
PERSONAL_CHECKING = ["checking", "personal_checking"]
LIVE_STATES = ["OPEN", "ACTIVE"]
# Early closure fee (dollars) and the age in days below which it applies, by account level.
CHECKING_EARLY_CLOSURE = {
    "Light Blue Account": (15, 30),
    "Light Green Account": (15, 30),
    "Green Fee-Free Account": (15, 30),
    "Blue Account": (25, 60),
    "Green Account": (25, 60),
    "Evergreen Account": (50, 90),
    "Bluest Account": (100, 180),
}
SAVINGS_EARLY_CLOSURE = {
    "Bronze Account": (20, 60),
    "Silver Account": (35, 90),
    "Silver Plus Account": (35, 90),
    "Gold Account": (75, 180),
    "Gold Plus Account": (75, 180),
    "Gold Years Account": (75, 180),
    "Platinum Account": (150, 270),
    "Platinum Plus Account": (150, 270),
    "Diamond Elite Account": (150, 270),
}
CHECKING_CREDITS = {
    "rebate_credit": "REBATE CREDIT - CUSTOMER SERVICE",
    "fee_refund": "FEE REFUND - CUSTOMER SERVICE",
}
SAVINGS_CREDITS = {
    "interest_correction": "INTEREST CORRECTION - CUSTOMER SERVICE",
    "fee_refund": "FEE REFUND - CUSTOMER SERVICE",
    "goodwill_credit": "GOODWILL CREDIT - CUSTOMER SERVICE",
}
DATE_FORMATS = ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y")


def age_in_days(account: Any) -> int:
    """Days since the account was opened (0 when its date cannot be read)."""
    try:
        return (NOW - datetime.strptime(account.get("date_opened", ""), "%m/%d/%Y")).days
    except ValueError:
        return 0


def account_kind(account: Any) -> Any:
    return account.get("account_type", account.get("class", ""))


def _transaction_time(record: Any) -> datetime:
    text = str(record.get("date", ""))
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return datetime.min


class BankAccountTools:
    db: Any

    def _eligible(self, user_id: Any, account_type: str) -> bool:
        """Whether the customer may open an account of this type (the bank's rules)."""
        owned = [a for a in self.db.accounts.data.values() if a.get("user_id") == user_id]
        if account_type == "savings":
            return any(
                account_kind(a) in PERSONAL_CHECKING
                and a.get("status", "") in LIVE_STATES
                and age_in_days(a) >= 14
                for a in owned
            )
        if account_type == "business_checking":
            if any(a.get("status") == "CLOSED" for a in owned):
                return False
            return any(
                account_kind(a) in PERSONAL_CHECKING and a.get("status", "") in LIVE_STATES
                for a in owned
            )
        if account_type == "business_savings":
            if any(records.balance(a) < 0 for a in owned):
                return False
            return any(
                account_kind(a) == "business_checking"
                and a.get("status", "") in LIVE_STATES
                and age_in_days(a) >= 30
                for a in owned
            )
        return True

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def open_bank_account_4821(self, user_id: str, account_type: str, account_class: str) -> str:
        """Open a bank account for a customer who qualifies for it.

        Args:
            user_id (string): The customer's id.
            account_type (string): 'checking', 'savings', 'business_checking' or
                'business_savings'.
            account_class (string): The account's full official name.
        """
        if not user_id or not account_type or not account_class:
            return "Error: Missing required parameters."
        if account_type not in ACCOUNT_TYPES:
            return f"Error: Invalid account_type. Must be one of: {ACCOUNT_TYPES}"
        if not self._eligible(user_id, account_type):
            return "Error: Account eligibility requirements not met."
        account_id = hex_id(f"account:{user_id}:{account_type}:{account_class}")
        record = {
            "account_id": account_id,
            "user_id": user_id,
            "account_type": account_type,
            "account_class": account_class,
            "current_holdings": "0.00",
            "status": "OPEN",
            "date_opened": TODAY,
        }
        if not records.add(self.db.accounts, account_id, record):
            return f"Failed to open account: Account ID '{account_id}' may already exist."
        return (
            f"Bank account opened successfully!\n"
            f"  - Account ID: {account_id}\n"
            f"  - User ID: {user_id}\n"
            f"  - Account Type: {account_type}\n"
            f"  - Account Class: {account_class}\n"
            f"  - Status: OPEN\n"
            f"  - Initial Balance: $0.00\n"
            f"  - Date Opened: {TODAY}"
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def close_bank_account_7392(
        self,
        account_id: str,
        reason: str = "Customer requested closure",
        waive_early_closure_fee: bool = False,
    ) -> str:
        """Close a checking or savings account whose balance is zero (after any early
        closure fee).

        Args:
            account_id (string): The account to close.
            reason (string, optional): Why it is closed.
            waive_early_closure_fee (boolean, optional): Skip the early closure fee.
        """
        if not account_id:
            return "Error: Missing required parameter (account_id)."
        accounts = self.db.accounts.data
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("status") == "CLOSED":
            return f"Error: Account '{account_id}' is already closed."
        held = records.balance(account)
        fee = 0.0
        if not waive_early_closure_fee:
            level = account.get("level", "")
            kind = account.get("class", "")
            opened = account.get("date_opened", "")
            rule = None
            if kind == "checking":
                rule = CHECKING_EARLY_CLOSURE.get(level)
            elif kind == "savings":
                rule = SAVINGS_EARLY_CLOSURE.get(level)
            if rule and opened:
                try:
                    age = (NOW - datetime.strptime(opened, "%m/%d/%Y")).days
                    if age < rule[1]:
                        if held < rule[0]:
                            return "Error: Account unable to be closed."
                        fee = rule[0]
                except ValueError:
                    pass
        if held - fee != 0:
            return (
                f"Error: Account balance must be $0.00 before closing. Current balance: ${held:.2f}"
            )
        account["status"] = "CLOSED"
        account["date_closed"] = TODAY
        account["closure_reason"] = reason
        account["early_closure_fee_waived"] = waive_early_closure_fee
        return (
            f"Bank account closed successfully!\n"
            f"  - Account ID: {account_id}\n"
            f"  - Account Type: {account.get('account_type', 'N/A')}\n"
            f"  - Account Class: {account.get('account_class', 'N/A')}\n"
            f"  - Status: CLOSED\n"
            f"  - Date Closed: {TODAY}\n"
            f"  - Reason: {reason}\n"
            f"  - Early Closure Fee Waived: {'Yes' if waive_early_closure_fee else 'No'}"
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_all_user_accounts_by_user_id_3847(self, user_id: str) -> str:
        """All of a customer's bank and credit card accounts.

        Args:
            user_id (string): The customer's id.
        """
        if not user_id:
            return missing("user_id")
        bank = records.lookup(self.db, "accounts", "user_id", user_id)
        cards = records.lookup(self.db, "credit_card_accounts", "user_id", user_id)
        lines = [
            "User accounts retrieved successfully.",
            "",
            "Executed: get_all_user_accounts_by_user_id_3847",
            f"Accounts for user {user_id}:",
            "",
            "Bank Accounts:",
            bank if records.found_any(bank) else "  No bank accounts found.",
            "\nCredit Card Accounts:",
            cards if records.found_any(cards) else "  No credit card accounts found.",
        ]
        return "\n".join(lines)

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def transfer_funds_between_bank_accounts_7291(
        self, source_account_id: str, destination_account_id: str, amount: float
    ) -> str:
        """Move money between two bank accounts.

        Args:
            source_account_id (string): The account to take the money from.
            destination_account_id (string): The account to put it in.
            amount (number): The amount in dollars.
        """
        if not source_account_id or not destination_account_id or amount is None:
            return (
                "Error: Missing required parameters (source_account_id, "
                "destination_account_id, amount)."
            )
        try:
            amount = float(amount)
        except (ValueError, TypeError):
            return f"Error: Invalid amount '{amount}'. Must be a number."
        if amount <= 0:
            return "Error: Transfer amount must be positive."
        if source_account_id == destination_account_id:
            return "Error: Source and destination accounts cannot be the same."
        accounts = self.db.accounts.data
        if source_account_id not in accounts:
            return f"Error: Source account '{source_account_id}' not found."
        if destination_account_id not in accounts:
            return f"Error: Destination account '{destination_account_id}' not found."
        source = accounts[source_account_id]
        if source.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Source account '{source_account_id}' is not active."
        destination = accounts[destination_account_id]
        if destination.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Destination account '{destination_account_id}' is not active."
        source_balance = records.balance(source)
        if source_balance < amount:
            return (
                f"Error: Insufficient funds. Source account balance is ${source_balance:.2f}, "
                f"but transfer amount is ${amount:.2f}."
            )
        destination_balance = records.balance(destination)
        new_source = source_balance - amount
        new_destination = destination_balance + amount
        source["current_holdings"] = f"${new_source:.2f}"
        destination["current_holdings"] = f"${new_destination:.2f}"
        return (
            f"Transfer completed successfully!\n"
            f"  - Amount: ${amount:.2f}\n"
            f"  - From: {source_account_id} (new balance: ${new_source:.2f})\n"
            f"  - To: {destination_account_id} (new balance: ${new_destination:.2f})"
        )

    def _credit(
        self,
        account_id: Any,
        amount: Any,
        credit_type: Any,
        descriptions: dict[str, str],
        kinds: tuple[str, ...],
        wrong_kind: str,
        seed_prefix: str,
        holdings_prefix: str,
    ) -> str:
        """Credit a bank account and record the credit as a posted transaction."""
        if not account_id or amount is None or not credit_type:
            return "Error: Missing required parameters."
        try:
            amount = float(amount)
        except (TypeError, ValueError):
            return "Error: Invalid credit amount. Must be a number."
        if amount <= 0:
            return "Error: Credit amount must be positive."
        if credit_type not in list(descriptions):
            return f"Error: Invalid credit_type. Must be one of: {list(descriptions)}"
        accounts = self.db.accounts.data
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("class", "").lower() not in kinds:
            return f"Error: Account '{account_id}' is not a {wrong_kind}"
        if account.get("status") not in ("ACTIVE", "OPEN"):
            return f"Error: Account '{account_id}' is not active."
        previous = records.balance(account)
        new_balance = previous + amount
        account["current_holdings"] = f"{holdings_prefix}{new_balance:.2f}"
        transaction_id = (
            f"txn_{hex_id(f'{seed_prefix}:{account_id}:{credit_type}:{amount}:{TODAY}')}"
        )
        self.db.bank_account_transaction_history.data[transaction_id] = {
            "transaction_id": transaction_id,
            "account_id": account_id,
            "date": TODAY,
            "description": descriptions[credit_type],
            "amount": amount,
            "type": credit_type,
            "status": "posted",
        }
        return (
            f"\nCredit applied successfully!\n"
            f"  - Transaction ID: {transaction_id}\n"
            f"  - Account: {account_id}\n"
            f"  - Credit Type: {credit_type}\n"
            f"  - Amount: ${amount:.2f}\n"
            f"  - Previous Balance: ${previous:.2f}\n"
            f"  - New Balance: ${new_balance:.2f}"
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def apply_checking_account_credit_5829(
        self, account_id: str, amount: float, credit_type: str
    ) -> str:
        """Credit a checking account: a missing rebate or a wrongly charged fee.

        Args:
            account_id (string): The checking account.
            amount (number): The credit in dollars, above zero.
            credit_type (string): 'rebate_credit' or 'fee_refund'.
        """
        return self._credit(
            account_id,
            amount,
            credit_type,
            CHECKING_CREDITS,
            ("checking",),
            "checking account. Credits can only be applied to checking accounts.",
            "checking_credit",
            "$",
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def apply_savings_account_credit_6831(
        self, account_id: str, amount: float, credit_type: str
    ) -> str:
        """Credit a savings account: interest corrections, fee refunds, goodwill.

        Args:
            account_id (string): The savings account.
            amount (number): The credit in dollars, above zero.
            credit_type (string): 'interest_correction', 'fee_refund' or 'goodwill_credit'.
        """
        return self._credit(
            account_id,
            amount,
            credit_type,
            SAVINGS_CREDITS,
            ("saving", "savings"),
            "savings account. This tool only applies to savings accounts.",
            "savings_credit",
            "",
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def submit_interest_discrepancy_report_7294(
        self,
        account_id: str,
        user_id: str,
        expected_apy: float,
        actual_apy: float,
        amount_difference: float,
    ) -> str:
        """Report interest credited at the wrong rate to the team that investigates it.

        Args:
            account_id (string): The savings account.
            user_id (string): The customer's id.
            expected_apy (number): The APY in percent the customer should have had.
            actual_apy (number): The APY in percent that was applied.
            amount_difference (number): The interest missing, in dollars.
        """
        if (
            not account_id
            or not user_id
            or expected_apy is None
            or actual_apy is None
            or amount_difference is None
        ):
            return "Error: Missing required parameters."
        try:
            expected_apy = float(expected_apy)
            actual_apy = float(actual_apy)
            amount_difference = float(amount_difference)
        except (ValueError, TypeError):
            return "Error: expected_apy, actual_apy, and amount_difference must be numbers."
        account = records.peek(self.db.accounts.data, account_id)
        if account is None:
            return f"Error: Account '{account_id}' not found."
        user = records.peek(self.db.users.data, user_id)
        if user is None:
            return f"Error: User '{user_id}' not found."
        seed = f"interest_report:{account_id}:{user_id}:{expected_apy}:{actual_apy}:{TODAY}"
        # The reference files the report in a table its database does not have, so nothing
        # is stored: the report exists only in this answer.
        return (
            f"\nInterest Discrepancy Report Submitted Successfully!\n"
            f"  - Report ID: IDR_{hex_id(seed)}\n"
            f"  - Account: {account_id} ({account.get('level', 'Unknown')})\n"
            f"  - Customer: {user.get('name', 'Unknown')}\n"
            f"  - Expected APY: {expected_apy}%\n"
            f"  - Actual APY: {actual_apy}%\n"
            f"  - APY Difference: {round(expected_apy - actual_apy, 4)}%\n"
            f"  - Amount Difference: ${amount_difference:.2f}\n"
            f"  - Status: PENDING_REVIEW\n"
            f"\nThe backend team will investigate this discrepancy and ensure "
            f"correct APY calculations are applied going forward."
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_bank_account_transactions_9173(self, account_id: str) -> str:
        """A bank account's transactions, most recent first (same-day ones in stored order).

        Args:
            account_id (string): The account.
        """
        if not account_id:
            return missing("account_id")
        if account_id not in self.db.accounts.data:
            return f"Error: Account '{account_id}' not found."
        found = records.select(
            self.db.bank_account_transaction_history.data, {"account_id": account_id}
        )
        found = sorted(found, key=lambda item: _transaction_time(item[1]), reverse=True)
        lines = [
            "Bank account transactions retrieved successfully.",
            "",
            "Executed: get_bank_account_transactions_9173",
            f"Transactions for account {account_id}:",
        ]
        if found:
            lines.append(records.listing("bank_account_transaction_history", found))
        else:
            lines.append("\nNo transactions found for this account.")
        return "\n".join(lines)
