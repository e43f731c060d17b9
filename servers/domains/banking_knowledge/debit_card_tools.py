"""Discoverable agent tools for a debit card's life: ordering, the three activation variants
(new, replacement, reissue), closing, freezing, unfreezing and listing an account's cards."""

from __future__ import annotations

import json
from typing import Any

from tau_mcp.servers.domains.banking_knowledge import ids, records
from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.ids import hex_id
from tau_mcp.servers.domains.banking_knowledge.pins import pin_problem
from tau_mcp.servers.domains.banking_knowledge.texts import title
from tau_mcp.servers.engine.toolkit import ToolKind

DELIVERY_TIMES = {
    "STANDARD": "7-10 business days",
    "EXPEDITED": "3-5 business days",
    "RUSH": "1-2 business days",
}
DESIGNS = ["CLASSIC", "PREMIUM", "CUSTOM"]
CLOSE_REASONS = [
    "lost",
    "stolen",
    "fraud_suspected",
    "damaged",
    "no_longer_needed",
    "account_closing",
]
# Which activation tool serves a card, by the reason it was issued.
ACTIVATION_TOOL = {
    "new_account": "activate_debit_card_8291",
    "first_card": "activate_debit_card_8291",
    "lost": "activate_debit_card_8292",
    "stolen": "activate_debit_card_8292",
    "fraud": "activate_debit_card_8292",
    "expired": "activate_debit_card_8293",
    "damaged": "activate_debit_card_8293",
    "upgrade": "activate_debit_card_8293",
    "bank_reissue": "activate_debit_card_8293",
}
THIRTY_ONE_DAY_MONTHS = ["01", "03", "05", "07", "08", "10", "12"]


def _expiration(order_date: str) -> str:
    """Four years on, at the end of the month."""
    try:
        parts = order_date.split("/")
        month, year = parts[0], int(parts[2]) + 4
    except (ValueError, IndexError):
        return "12/31/2029"
    if month in THIRTY_ONE_DAY_MONTHS:
        day = "31"
    elif month == "02":
        day = "28"
    else:
        day = "30"
    return f"{month}/{day}/{year}"


def _digits(text: str, count: int) -> str:
    return "".join(c for c in text if c.isdigit())[:count].zfill(count)


class DebitCardTools:
    db: Any

    # --- ordering -----------------------------------------------------------------------------
    def _issue_reason(self, account_id: Any) -> str:
        """Why a new card for this account is issued, from the account's earlier cards."""
        earlier = [
            c for c in self.db.debit_cards.data.values() if c.get("account_id") == account_id
        ]
        closed = next((c for c in earlier if c.get("status") == "CLOSED"), None)
        if closed:
            reason = closed.get("closure_reason", "first_card")
            if reason in ["lost", "stolen", "fraud", "fraud_suspected"]:
                return reason if reason != "fraud_suspected" else "fraud"
            return "first_card"
        return "first_card" if earlier else "new_account"

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def order_debit_card_5739(
        self,
        account_id: str,
        user_id: str,
        delivery_option: str,
        delivery_fee: float,
        card_design: str,
        design_fee: float,
        shipping_address: str,
        excess_replacement_fee: float | None = None,
    ) -> str:
        """Order a debit card for a checking account; fees are charged to the account.

        Args:
            account_id (string): The checking account the card draws on.
            user_id (string): The customer's id.
            delivery_option (string): STANDARD, EXPEDITED or RUSH.
            delivery_fee (number): The delivery fee in dollars.
            card_design (string): CLASSIC, PREMIUM or CUSTOM.
            design_fee (number): The design fee in dollars.
            shipping_address (string): Where to send the card.
            excess_replacement_fee (number, optional): The fee for replacing too often.
        """
        excess = excess_replacement_fee or 0
        try:
            delivery_fee = float(delivery_fee) if delivery_fee is not None else None
        except (TypeError, ValueError):
            return "Error: delivery_fee must be a number."
        try:
            design_fee = float(design_fee) if design_fee is not None else None
        except (TypeError, ValueError):
            return "Error: design_fee must be a number."
        try:
            excess = float(excess)
        except (TypeError, ValueError):
            excess = 0
        given = [
            account_id,
            user_id,
            delivery_option,
            delivery_fee is not None,
            card_design,
            design_fee is not None,
            shipping_address,
        ]
        if not all(given):
            return (
                "Error: Missing required parameters. Required: account_id, user_id, "
                "delivery_option, delivery_fee, card_design, design_fee, shipping_address."
            )
        if delivery_option.upper() not in list(DELIVERY_TIMES):
            return f"Error: Invalid delivery_option. Must be one of: {list(DELIVERY_TIMES)}"
        delivery_option = delivery_option.upper()
        if card_design.upper() not in DESIGNS:
            return f"Error: Invalid card_design. Must be one of: {DESIGNS}"
        card_design = card_design.upper()
        accounts = self.db.accounts.data
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        account = accounts[account_id]
        if account.get("class") != "checking":
            return (
                f"Error: Debit cards can only be ordered for checking accounts. Account "
                f"'{account_id}' is a {account.get('class')} account."
            )
        if account.get("status") != "OPEN":
            return (
                f"Error: Account must be OPEN. Account '{account_id}' has status: "
                f"{account.get('status')}"
            )
        if account.get("user_id") != user_id:
            return f"Error: Account '{account_id}' does not belong to user '{user_id}'."
        try:
            holdings = float(str(account.get("current_holdings", "0")).replace(",", ""))
        except ValueError:
            holdings = 0.0
        if holdings < 25.0:
            return (
                f"Error: Account must have a minimum balance of $25. Current balance: "
                f"${holdings:.2f}"
            )
        for order in self.db.debit_card_orders.data.values():
            if order.get("account_id") == account_id and order.get("status") == "PENDING":
                return f"Error: There is already a pending debit card order for account '{account_id}'."
        active = sum(
            1
            for card in self.db.debit_cards.data.values()
            if card.get("account_id") == account_id and card.get("status") == "ACTIVE"
        )
        if active >= 1:
            return (
                f"Error: Account '{account_id}' already has an active debit card. Maximum 1 "
                f"active card per checking account."
            )
        total = delivery_fee + design_fee + excess
        if total > 0 and holdings < total:
            return (
                f"Error: Insufficient funds for fees. Total fees: ${total:.2f}. Current "
                f"balance: ${holdings:.2f}"
            )
        expected = DELIVERY_TIMES[delivery_option]
        order_id = ids.debit_card_order_id(account_id, user_id, delivery_option)
        order = {
            "order_id": order_id,
            "account_id": account_id,
            "user_id": user_id,
            "delivery_option": delivery_option,
            "card_design": card_design,
            "shipping_address": shipping_address,
            "delivery_fee": delivery_fee,
            "design_fee": design_fee,
            "excess_replacement_fee": excess,
            "total_fee": total,
            "order_date": TODAY,
            "expected_delivery": expected,
            "status": "PENDING",
        }
        if not records.add(self.db.debit_card_orders, order_id, order):
            return "Error: Failed to create debit card order. Order may already exist."
        if total > 0:
            accounts[account_id]["current_holdings"] = f"{holdings - total:.2f}"
            charged = []
            if delivery_fee > 0:
                charged.append(f"Delivery ${delivery_fee}")
            if design_fee > 0:
                charged.append(f"Design ${design_fee}")
            if excess > 0:
                charged.append(f"Excess Replacement ${excess:.0f}")
            fee_id = f"btxn_dcfee_{order_id[-8:]}"
            fee = {
                "transaction_id": fee_id,
                "account_id": account_id,
                "date": TODAY,
                "description": f"DEBIT CARD ORDER FEE - {', '.join(charged)}",
                "amount": -total,
                "type": "debit_card_fee",
                "status": "posted",
            }
            records.add(self.db.bank_account_transaction_history, fee_id, fee)
        card_id = ids.debit_card_id(account_id, user_id, TODAY)
        user = records.peek(self.db.users.data, user_id)
        holder = user.get("name", "CARDHOLDER").upper() if user is not None else "CARDHOLDER"
        card = {
            "card_id": card_id,
            "account_id": account_id,
            "user_id": user_id,
            "cardholder_name": holder,
            "last_4_digits": _digits(hex_id(f"card_details:{card_id}:last4", 8), 4),
            "cvv": _digits(hex_id(f"card_details:{card_id}:cvv", 6), 3),
            "status": "PENDING",
            "issue_date": TODAY,
            "expiration_date": _expiration(TODAY),
            "card_design": card_design,
            "issue_reason": self._issue_reason(account_id),
        }
        records.add(self.db.debit_cards, card_id, card)
        lines = [
            "Debit Card Order Confirmed",
            f"Order ID: {order_id}",
            f"Card ID: {card_id}",
            f"Linked Account: {account_id}",
            f"Delivery Option: {delivery_option}",
            f"Card Design: {card_design}",
            f"Shipping Address: {shipping_address}",
            f"Expected Delivery: {expected}",
            "",
            "Note: Card will arrive with status PENDING. Customer must call to activate after "
            "receiving the card.",
        ]
        if total > 0:
            details = []
            if delivery_fee > 0:
                details.append(f"Delivery: ${delivery_fee}")
            if design_fee > 0:
                details.append(f"Design: ${design_fee}")
            if excess > 0:
                details.append(f"Excess Replacement: ${excess:.0f}")
            lines.append(
                f"Total Fees: ${total:.2f} ({', '.join(details)}) - CHARGED to account {account_id}"
            )
            lines.append(f"New Account Balance: ${holdings - total:.2f}")
        else:
            lines.append("Total Fees: $0 (No additional charges)")
        return "\n".join(lines)

    # --- activation ---------------------------------------------------------------------------
    def _activation_problem(
        self,
        card_id: Any,
        last_4_digits: Any,
        expiration_date: Any,
        cvv: Any,
        pin: Any,
        reasons: list[str],
        tool_name: str,
    ) -> tuple[str | None, Any]:
        """(error, the card to activate): the checks every activation variant makes."""
        if not all([card_id, last_4_digits, expiration_date, cvv, pin]):
            return (
                "Error: Missing required parameters. Required: card_id, last_4_digits, "
                "expiration_date, cvv, pin.",
                None,
            )
        problem = pin_problem(pin)
        if problem:
            return f"Error: {problem}", None
        if not cvv.isdigit() or len(cvv) != 3:
            return "Error: CVV must be exactly 3 digits.", None
        if not last_4_digits.isdigit() or len(last_4_digits) != 4:
            return "Error: Last 4 digits must be exactly 4 digits.", None
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found.", None
        card = cards[card_id]
        reason = card.get("issue_reason", "new_account")
        if reason not in reasons:
            right = ACTIVATION_TOOL.get(reason, "unknown")
            return (
                f"Error: Wrong activation tool. This card has issue_reason='{reason}'. Please "
                f"use {right} instead of {tool_name}.",
                None,
            )
        if card.get("status") == "ACTIVE":
            return f"Error: Debit card '{card_id}' is already active.", None
        if card.get("status") != "PENDING":
            return (
                f"Error: Debit card '{card_id}' cannot be activated. Current status: "
                f"{card.get('status')}. Only PENDING cards can be activated.",
                None,
            )
        if card.get("last_4_digits") != last_4_digits:
            return (
                "Error: Card verification failed. The last 4 digits do not match our records.",
                None,
            )
        problem = self._closed_account(card, "activated")
        if problem:
            return problem, None
        return None, card

    def _closed_account(self, card: Any, action: str) -> str | None:
        """The error when the card's checking account exists and is no longer open."""
        account_id = card.get("account_id")
        accounts = self.db.accounts.data
        if account_id and account_id in accounts:
            if accounts.peek(account_id).get("status") != "OPEN":
                return (
                    f"Error: The linked checking account '{account_id}' is no longer open. "
                    f"Card cannot be {action}."
                )
        return None

    def _other_active_cards(self, card_id: Any, account_id: Any) -> list[str]:
        """Ids of the account's other active cards."""
        return [
            other_id
            for other_id, other in self.db.debit_cards.data.items()
            if other_id != card_id
            and other.get("account_id") == account_id
            and other.get("status") == "ACTIVE"
        ]

    def _activate(self, card: Any, card_id: Any) -> list[str]:
        """Activate the card; returns the other active cards of its account, to retire."""
        card["status"] = "ACTIVE"
        card["activated_date"] = TODAY
        return self._other_active_cards(card_id, card.get("account_id"))

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def activate_debit_card_8291(
        self, card_id: str, last_4_digits: str, expiration_date: str, cvv: str, pin: str
    ) -> str:
        """Activate a checking account's first card (issued as 'new_account' or
        'first_card'); replacements and reissues have their own variants.

        Args:
            card_id (string): The card.
            last_4_digits (string): Last four digits of the card, to verify it.
            expiration_date (string): Expiration date, MM/YY.
            cvv (string): The three-digit CVV.
            pin (string): The four-digit PIN the customer chose.
        """
        error, card = self._activation_problem(
            card_id,
            last_4_digits,
            expiration_date,
            cvv,
            pin,
            ["new_account", "first_card"],
            "activate_debit_card_8291",
        )
        if error:
            return error
        retired = self._activate(card, card_id)
        for other_id in retired:
            other = self.db.debit_cards.data[other_id]
            other["status"] = "DEACTIVATED"
            other["deactivated_date"] = TODAY
            other["deactivation_reason"] = "New card activated"
        lines = [
            "New Debit Card Activation Successful",
            f"Card ID: {card_id}",
            "Status: ACTIVE",
            f"Activation Date: {TODAY}",
            "",
            "Your card is now ready to use at any ATM or point of sale terminal.",
            "For security, please sign the back of your card.",
        ]
        if retired:
            lines.append(f"\nNote: Previous card(s) have been deactivated: {', '.join(retired)}")
        return "\n".join(lines)

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def activate_debit_card_8292(
        self, card_id: str, last_4_digits: str, expiration_date: str, cvv: str, pin: str
    ) -> str:
        """Activate a card replacing a lost, stolen or compromised one (issued as 'lost',
        'stolen' or 'fraud').

        Args:
            card_id (string): The card.
            last_4_digits (string): Last four digits of the card, to verify it.
            expiration_date (string): Expiration date, MM/YY.
            cvv (string): The three-digit CVV.
            pin (string): The four-digit PIN the customer chose.
        """
        error, card = self._activation_problem(
            card_id,
            last_4_digits,
            expiration_date,
            cvv,
            pin,
            ["lost", "stolen", "fraud"],
            "activate_debit_card_8292",
        )
        if error:
            return error
        reason = card.get("issue_reason", "lost")
        retired = self._activate(card, card_id)
        for other_id in retired:
            other = self.db.debit_cards.data[other_id]
            other["status"] = "DEACTIVATED"
            other["deactivated_date"] = TODAY
            other["deactivation_reason"] = f"Replacement card activated ({reason})"
        lines = [
            "Replacement Debit Card Activation Successful",
            f"Card ID: {card_id}",
            f"Replacement Reason: {title(reason)}",
            "Status: ACTIVE",
            f"Activation Date: {TODAY}",
            "",
            "Your replacement card is now ready to use.",
            "",
            "IMPORTANT SECURITY REMINDERS:",
            "- Please review your recent transactions for any unauthorized charges",
            "- Report any suspicious activity immediately",
        ]
        if reason == "fraud":
            lines.append(
                "- Since fraud was suspected, we recommend changing your online banking password"
            )
        if retired:
            lines.append(
                f"\nPrevious card(s) have been deactivated for security: {', '.join(retired)}"
            )
        return "\n".join(lines)

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def activate_debit_card_8293(
        self, card_id: str, last_4_digits: str, expiration_date: str, cvv: str, pin: str
    ) -> str:
        """Activate a reissued card (issued as 'expired', 'damaged', 'upgrade' or
        'bank_reissue'); the old card keeps working for a day.

        Args:
            card_id (string): The card.
            last_4_digits (string): Last four digits of the card, to verify it.
            expiration_date (string): Expiration date, MM/YY.
            cvv (string): The three-digit CVV.
            pin (string): The four-digit PIN the customer chose.
        """
        error, card = self._activation_problem(
            card_id,
            last_4_digits,
            expiration_date,
            cvv,
            pin,
            ["expired", "damaged", "upgrade", "bank_reissue"],
            "activate_debit_card_8293",
        )
        if error:
            return error
        reason = card.get("issue_reason", "expired")
        retiring = self._activate(card, card_id)
        for other_id in retiring:
            other = self.db.debit_cards.data[other_id]
            other["status"] = "GRACE_PERIOD"
            other["grace_period_ends"] = TODAY
            other["deactivation_reason"] = f"Reissued card activated ({reason})"
        lines = [
            "Reissued Debit Card Activation Successful",
            f"Card ID: {card_id}",
            f"Reissue Reason: {title(reason)}",
            "Status: ACTIVE",
            f"Activation Date: {TODAY}",
            "",
            "Your reissued card is now ready to use.",
        ]
        if retiring:
            lines.append(
                f"\nNote: Your previous card(s) ({', '.join(retiring)}) will remain active for "
                f"24 hours as a grace period."
            )
            lines.append("After 24 hours, the old card(s) will be automatically deactivated.")
        if reason in ["expired", "bank_reissue"]:
            lines.append(
                "\nReminder: If your card number changed, please update any recurring payments "
                "with your new card details."
            )
        return "\n".join(lines)

    # --- closing, freezing --------------------------------------------------------------------
    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def close_debit_card_4721(self, card_id: str, reason: str) -> str:
        """Close a debit card for good.

        Args:
            card_id (string): The card.
            reason (string): lost, stolen, fraud_suspected, damaged, no_longer_needed or
                account_closing.
        """
        if not card_id or not reason:
            return "Error: Missing required parameters. Required: card_id, reason."
        if reason.lower() not in CLOSE_REASONS:
            return f"Error: Invalid reason. Must be one of: {CLOSE_REASONS}"
        reason = reason.lower()
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") not in ["ACTIVE", "PENDING"]:
            return (
                f"Error: Debit card '{card_id}' cannot be closed. Current status: "
                f"{card.get('status')}. Only ACTIVE or PENDING cards can be closed."
            )
        previous = card.get("status")
        card["status"] = "CLOSED"
        card["closed_date"] = TODAY
        card["closure_reason"] = reason
        lines = [
            "Debit Card Closed Successfully",
            f"Card ID: {card_id}",
            f"Previous Status: {previous}",
            "New Status: CLOSED",
            f"Closure Reason: {title(reason)}",
            f"Closure Date: {TODAY}",
            "",
        ]
        if reason in ["lost", "stolen", "fraud_suspected"]:
            lines.append("IMPORTANT: This card has been immediately deactivated for security.")
            lines.append("Any pending transactions may still be processed.")
            if reason == "fraud_suspected":
                lines.append(
                    "Please advise the customer to review recent transactions and file disputes "
                    "for any unauthorized charges."
                )
                lines.append("Also recommend changing their online banking password.")
        lines.append("")
        lines.append(
            "Note: This card cannot be reactivated. If the customer needs a new card, they can "
            "order one through the standard ordering process."
        )
        lines.append(
            "Any recurring payments linked to this card will need to be updated with new "
            "payment information."
        )
        return "\n".join(lines)

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def freeze_debit_card_3892(self, card_id: str) -> str:
        """Freeze a debit card until it is unfrozen.

        Args:
            card_id (string): The card.
        """
        if not card_id:
            return "Error: Missing required parameter: card_id."
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") == "FROZEN":
            return f"Error: Debit card '{card_id}' is already frozen."
        if card.get("status") != "ACTIVE":
            return (
                f"Error: Debit card '{card_id}' cannot be frozen. Current status: "
                f"{card.get('status')}. Only ACTIVE cards can be frozen."
            )
        card["status"] = "FROZEN"
        card["frozen_date"] = TODAY
        lines = [
            "Debit Card Frozen Successfully",
            f"Card ID: {card_id}",
            "Status: FROZEN",
            f"Frozen Date: {TODAY}",
            "",
            "While frozen:",
            "- All new purchase transactions will be declined",
            "- Recurring payments and subscriptions will be declined",
            "- Pending transactions already authorized may still process",
            "",
            "To unfreeze, the customer can call customer service or use the mobile app.",
            "If the card is confirmed lost or stolen, recommend closing the card permanently "
            "instead.",
        ]
        return "\n".join(lines)

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def unfreeze_debit_card_3893(self, card_id: str) -> str:
        """Unfreeze a frozen debit card.

        Args:
            card_id (string): The card.
        """
        if not card_id:
            return "Error: Missing required parameter: card_id."
        cards = self.db.debit_cards.data
        if card_id not in cards:
            return f"Error: Debit card '{card_id}' not found."
        card = cards[card_id]
        if card.get("status") == "ACTIVE":
            return f"Error: Debit card '{card_id}' is already active."
        if card.get("status") != "FROZEN":
            return (
                f"Error: Debit card '{card_id}' cannot be unfrozen. Current status: "
                f"{card.get('status')}. Only FROZEN cards can be unfrozen."
            )
        problem = self._closed_account(card, "unfrozen")
        if problem:
            return problem
        card["status"] = "ACTIVE"
        card["unfrozen_date"] = TODAY
        lines = [
            "Debit Card Unfrozen Successfully",
            f"Card ID: {card_id}",
            "Status: ACTIVE",
            f"Unfrozen Date: {TODAY}",
            "",
            "The card is now active and ready to use immediately.",
            "All transactions will process normally.",
        ]
        return "\n".join(lines)

    # --- listing ------------------------------------------------------------------------------
    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_debit_cards_by_account_id_7823(self, account_id: str) -> str:
        """The debit cards of a checking account, newest first.

        Args:
            account_id (string): The checking account.
        """
        if not account_id:
            return "Error: Missing required parameter 'account_id'."
        accounts = self.db.accounts.data
        if account_id not in accounts:
            return f"Error: Account '{account_id}' not found."
        kind = accounts.peek(account_id).get("class", "").lower()
        if kind not in ["checking", "business_checking"]:
            return (
                f"Error: Account '{account_id}' is not a checking account. Debit cards are only "
                f"available for checking accounts."
            )
        shown = []
        for card_id, card in self.db.debit_cards.data.items():
            if card.get("account_id") != account_id:
                continue
            entry = {"card_id": card_id}
            entry.update(card)
            if "last_4_digits" in entry and "card_number_last_4" not in entry:
                entry["card_number_last_4"] = entry.pop("last_4_digits")
            if "issue_date" in entry and "date_issued" not in entry:
                entry["date_issued"] = entry.pop("issue_date")
            elif "created_date" in entry and "date_issued" not in entry:
                entry["date_issued"] = entry.pop("created_date")
            shown.append(entry)
        if not shown:
            return f"No debit cards found for account '{account_id}'."
        shown.sort(key=lambda entry: entry.get("date_issued") or "", reverse=True)
        return json.dumps(shown, indent=2)
