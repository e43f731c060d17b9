"""Discoverable agent tools for a debit card's safeguards: the recurring-payment block, fraud
alerts and velocity blocks, PIN resets and changes, temporary limit increases."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.pins import pin_problem
from tau_mcp.servers.engine.toolkit import ToolKind

ALERT_CLEAR_REASONS = ["customer_verified", "velocity_clear"]
# Daily ATM limits (dollars) of cards with no limit of their own, by checking account level.
DEFAULT_ATM_LIMITS = {
    "blue account": 500,
    "green account": 600,
    "light blue account": 400,
    "green fee-free account": 500,
    "evergreen account": 750,
    "bluest account": 1500,
    "dark green account": 300,
    "gold years account": 600,
    "purple account": 1000,
}
NOT_FOUND = "Error: Debit card '{}' not found."
SECURITY_REMINDER = "Security reminder: Never share your PIN with anyone."
PIN_EFFECTIVE = "The new PIN is effective immediately."
PIN_USE = "Customer can use the new PIN for ATM withdrawals and point-of-sale transactions."


class CardSecurityTools:
    db: Any

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def set_debit_card_recurring_block_7382(self, card_id: str, block_recurring: bool) -> str:
        """Decline (or allow again) every recurring charge on a debit card.

        Args:
            card_id (string): The card.
            block_recurring (boolean): True to block recurring charges, False to allow them.
        """
        if not card_id:
            return "Error: Missing required parameter: card_id"
        card = self.db.debit_cards.data.get(card_id)
        if not card:
            return NOT_FOUND.format(card_id)
        status = card.get("status", "").upper()
        if status != "ACTIVE":
            return (
                f"Error: Cannot update recurring block settings for a card with status "
                f"'{status}'. Card must be ACTIVE."
            )
        card["recurring_blocked"] = block_recurring
        if block_recurring:
            return (
                f"Recurring payments BLOCKED for debit card {card_id}.\n"
                f"All recurring/subscription charges will be declined.\n"
                f"One-time purchases are not affected.\n"
                f"This change takes effect within 24 hours."
            )
        return (
            f"Recurring payments UNBLOCKED for debit card {card_id}.\n"
            f"Recurring/subscription charges will now be allowed.\n"
            f"This change takes effect within 24 hours."
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def clear_debit_card_fraud_alert_4892(self, card_id: str, reason: str) -> str:
        """Lift a fraud alert or a velocity block from a debit card.

        Args:
            card_id (string): The card.
            reason (string): 'customer_verified' (fraud alert, customer verified) or
                'velocity_clear' (velocity block, identity verified).
        """
        if not card_id:
            return "Error: Missing required parameter: card_id."
        if not reason:
            return "Error: Missing required parameter: reason."
        if reason not in ALERT_CLEAR_REASONS:
            return (
                f"Error: Invalid reason '{reason}'. Must be one of: "
                f"{', '.join(ALERT_CLEAR_REASONS)}"
            )
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return NOT_FOUND.format(card_id)
        card = cards[card_id]
        if reason == "velocity_clear":
            if not card.get("velocity_blocked", False):
                return f"Error: Debit card '{card_id}' does not have an active velocity block."
            card["velocity_blocked"] = False
            card["velocity_cleared_date"] = TODAY
            return "\n".join(
                [
                    "Velocity Block Cleared Successfully",
                    f"Card ID: {card_id}",
                    f"Cleared Date: {TODAY}",
                    "",
                    "The card is now unblocked and ready for normal use.",
                    "The velocity monitoring will continue - if the same unusual patterns recur,",
                    "the card may be blocked again automatically.",
                ]
            )
        if not card.get("fraud_alert_active", False):
            return f"Error: Debit card '{card_id}' does not have an active fraud alert."
        if card.get("alert_source") == "bank_initiated":
            return (
                "Error: BANK_INITIATED_ALERT - This fraud alert was initiated by the bank's "
                "fraud detection system and cannot be cleared by customer service agents. "
                "Please transfer the customer to the security team using "
                "transfer_to_human_agents."
            )
        card["fraud_alert_active"] = False
        card["alert_source"] = None
        card["fraud_alert_cleared_date"] = TODAY
        return "\n".join(
            [
                "Fraud Alert Cleared Successfully",
                f"Card ID: {card_id}",
                f"Cleared Date: {TODAY}",
                "",
                "The fraud alert has been removed from the card.",
                "All transactions will process normally.",
                "",
                "Remind the customer to review recent transactions and report any unauthorized "
                "charges.",
            ]
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def reset_debit_card_pin_6284(self, card_id: str, last_4_digits: str, new_pin: str) -> str:
        """Set a new PIN for a customer who forgot theirs; unlocks a locked PIN.

        Args:
            card_id (string): The card.
            last_4_digits (string): Last four digits of the card, to verify it.
            new_pin (string): The new four-digit PIN.
        """
        if not all([card_id, last_4_digits, new_pin]):
            return "Error: Missing required parameters. Required: card_id, last_4_digits, new_pin."
        if not last_4_digits.isdigit() or len(last_4_digits) != 4:
            return "Error: Last 4 digits must be exactly 4 digits."
        problem = pin_problem(new_pin)
        if problem:
            return f"Error: {problem}"
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return NOT_FOUND.format(card_id)
        card = cards[card_id]
        if card.get("last_4_digits") != last_4_digits:
            return "Error: Card verification failed. The last 4 digits do not match our records."
        if card.get("status") != "ACTIVE":
            return (
                f"Error: Cannot reset PIN. Card status is {card.get('status')}. Only ACTIVE "
                f"cards can have their PIN reset."
            )
        card["pin_last_changed"] = TODAY
        card["pin_locked"] = False
        card["pin_attempts_remaining"] = 3
        return "\n".join(
            [
                "Debit Card PIN Reset Successfully",
                f"Card ID: {card_id}",
                f"PIN Changed: {TODAY}",
                "",
                PIN_EFFECTIVE,
                "Your card has been unlocked and is ready to use.",
                PIN_USE,
                "",
                SECURITY_REMINDER,
            ]
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def change_debit_card_pin_6285(self, card_id: str, current_pin: str, new_pin: str) -> str:
        """Change a PIN the customer knows.

        Args:
            card_id (string): The card.
            current_pin (string): The current four-digit PIN.
            new_pin (string): The new four-digit PIN.
        """
        if not all([card_id, current_pin, new_pin]):
            return "Error: Missing required parameters. Required: card_id, current_pin, new_pin."
        if not current_pin.isdigit() or len(current_pin) != 4:
            return "Error: Current PIN must be exactly 4 digits."
        problem = pin_problem(new_pin)
        if problem:
            return f"Error: {problem}"
        if current_pin == new_pin:
            return "Error: New PIN must be different from current PIN."
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return NOT_FOUND.format(card_id)
        card = cards[card_id]
        if card.get("status") != "ACTIVE":
            return (
                f"Error: Cannot change PIN. Card status is {card.get('status')}. Only ACTIVE "
                f"cards can have their PIN changed."
            )
        card["pin_last_changed"] = TODAY
        return "\n".join(
            [
                "Debit Card PIN Changed Successfully",
                f"Card ID: {card_id}",
                f"PIN Changed: {TODAY}",
                "",
                PIN_EFFECTIVE,
                PIN_USE,
                "",
                SECURITY_REMINDER,
            ]
        )

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def request_temporary_debit_card_limit_increase_8374(
        self, card_id: str, limit_type: str, new_limit: int
    ) -> str:
        """Raise a debit card's daily ATM or purchase limit for 24 hours (up to 150%).

        Args:
            card_id (string): The card.
            limit_type (string): 'atm' (daily ATM withdrawals) or 'purchase' (daily purchases).
            new_limit (integer): The temporary limit in dollars.
        """
        if not card_id:
            return "Error: Missing required parameter: card_id."
        if not limit_type:
            return "Error: Missing required parameter: limit_type."
        if limit_type not in ["atm", "purchase"]:
            return f"Error: Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'."
        if new_limit is None:
            return "Error: Missing required parameter: new_limit."
        try:
            wanted = float(new_limit)
        except (ValueError, TypeError):
            return f"Error: new_limit must be an integer, got '{new_limit}'."
        if not wanted.is_integer():
            return f"Error: new_limit must be an integer, got '{wanted}'."
        wanted = int(wanted)
        if wanted <= 0:
            return "Error: new_limit must be a positive amount."
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return NOT_FOUND.format(card_id)
        card = cards[card_id]
        if card.get("status") != "ACTIVE":
            return (
                f"Error: Debit card '{card_id}' is not active. Current status: "
                f"{card.get('status')}. Only ACTIVE cards can have limit increases."
            )
        account_id = card.get("account_id")
        accounts = self.db.accounts.data
        if not account_id or account_id not in accounts:
            return f"Error: Could not find linked account for debit card '{card_id}'."
        account = accounts.peek(account_id)
        if account.get("status") != "OPEN":
            return (
                f"Error: The linked account '{account_id}' is not in good standing. Account "
                f"status: {account.get('status')}."
            )
        opened = account.get("date_opened")
        if opened:
            try:
                age = (
                    datetime.strptime(TODAY, "%m/%d/%Y") - datetime.strptime(opened, "%m/%d/%Y")
                ).days
                if age < 60:
                    return (
                        f"Error: Account must be at least 60 days old for a temporary limit "
                        f"increase. Account age: {age} days."
                    )
            except ValueError:
                pass
        if limit_type == "atm":
            current = card.get("daily_atm_limit")
            field, name = "daily_atm_limit", "Daily ATM Withdrawal Limit"
            if current is None:
                level = account.get("level", "").lower()
                if "light green" in level:
                    return (
                        "Error: Light Green Account (teen checking) cards have policy-based "
                        "limits that cannot be modified. The daily ATM withdrawal limit of $150 "
                        "is fixed by account policy for safety reasons. The customer may request "
                        "the parent/guardian to withdraw cash from their own account if needed."
                    )
                current = DEFAULT_ATM_LIMITS.get(level)
                if current is None:
                    return (
                        f"Error: Could not determine the default ATM limit for account type "
                        f"'{account.get('level')}'. Please verify the account type."
                    )
        else:
            current = card.get("daily_purchase_limit")
            field, name = "daily_purchase_limit", "Daily Purchase Limit"
        if current is None:
            return (
                f"Error: The card does not have a {name.lower()} configured. This may be a "
                f"restricted account type where limits are set by account policy and cannot "
                f"be modified."
            )
        ceiling = int(current * 1.5)
        if wanted > ceiling:
            return (
                f"Error: Requested limit ${wanted} exceeds the maximum allowed temporary "
                f"increase. Maximum temporary limit is ${ceiling} (150% of current ${current} "
                f"limit)."
            )
        if wanted <= current:
            return (
                f"Error: Requested limit ${wanted} is not higher than the current limit of "
                f"${current}."
            )
        card[field] = wanted
        card[f"temporary_{limit_type}_limit_increase"] = True
        card[f"original_{limit_type}_limit"] = current
        card[f"temporary_{limit_type}_limit_expires"] = TODAY
        return "\n".join(
            [
                f"Temporary {name} Increase Granted Successfully",
                f"Card ID: {card_id}",
                f"Previous Limit: ${current}",
                f"New Temporary Limit: ${wanted}",
                f"Increase Amount: ${wanted - current}",
                "",
                "Important Information:",
                "- This temporary increase expires in 24 hours",
                f"- After expiration, the limit will revert to ${current}",
                "- Only one temporary increase is allowed per 24-hour period",
                "",
                "Note: If the customer is at a third-party (non-Rho-Bank) ATM, that ATM may have "
                "its own",
                "per-transaction or daily limits that Rho-Bank cannot override. The customer may "
                "need to",
                "use a Rho-Bank ATM or make multiple smaller withdrawals at third-party ATMs.",
            ]
        )
