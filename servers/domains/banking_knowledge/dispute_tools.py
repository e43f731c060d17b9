"""Discoverable agent tools for disputes: filing credit and debit card disputes, looking them
up, and the ATM deposit images a deposit dispute relies on."""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.domains.banking_knowledge import ids, records
from tau_mcp.servers.domains.banking_knowledge.atm_images import IMAGES
from tau_mcp.servers.domains.banking_knowledge.clock import TODAY
from tau_mcp.servers.domains.banking_knowledge.discoverable import AGENT_CLASS, discoverable
from tau_mcp.servers.domains.banking_knowledge.texts import history, missing, title
from tau_mcp.servers.engine.toolkit import ToolKind

CREDIT_CARD_ACTIONS = ["keep_active", "cancel_and_reissue"]
CREDIT_DISPUTE_REASONS = [
    "unauthorized_fraudulent_charge",
    "duplicate_charge",
    "incorrect_amount",
    "goods_services_not_received",
    "goods_services_not_as_described",
    "canceled_subscription_still_charging",
    "refund_never_processed",
]
RESOLUTIONS = ["full_refund", "partial_refund"]
DEBIT_CATEGORIES = [
    "unauthorized_transaction",
    "atm_cash_discrepancy",
    "atm_deposit_not_credited",
    "duplicate_charge",
    "incorrect_amount",
    "goods_services_not_received",
    "recurring_charge_after_cancellation",
    "card_present_fraud",
    "card_not_present_fraud",
]
FRAUD_CATEGORIES = ["unauthorized_transaction", "card_present_fraud", "card_not_present_fraud"]
DEBIT_TRANSACTION_TYPES = [
    "pin_purchase",
    "signature_purchase",
    "online_purchase",
    "atm_withdrawal",
    "atm_deposit",
    "recurring_payment",
    "person_to_person",
]
PIN_STATES = ["yes_shared", "yes_observed", "no", "unknown"]
DEBIT_CARD_ACTIONS = ["keep_active", "freeze_pending_investigation", "close_and_reissue"]


class DisputeTools:
    db: Any

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def file_credit_card_transaction_dispute_4829(
        self,
        transaction_id: str,
        card_action: str,
        card_last_4_digits: str,
        full_name: str,
        user_id: str,
        phone: str,
        email: str,
        address: str,
        contacted_merchant: bool,
        purchase_date: str,
        issue_noticed_date: str,
        dispute_reason: str,
        resolution_requested: str,
        eligible_for_provisional_credit: bool,
        partial_refund_amount: float | None = None,
    ) -> str:
        """Open a dispute on a credit card transaction.

        Args:
            transaction_id (string): The disputed transaction.
            card_action (string): 'keep_active' or 'cancel_and_reissue' (recorded only).
            card_last_4_digits (string): Last four digits of the card.
            full_name (string): The cardholder's legal name.
            user_id (string): The customer's id.
            phone (string): Contact phone.
            email (string): Contact email.
            address (string): Contact address.
            contacted_merchant (boolean): Whether the merchant was contacted first.
            purchase_date (string): Purchase date, MM/DD/YYYY.
            issue_noticed_date (string): When the problem was noticed, MM/DD/YYYY.
            dispute_reason (string): One of the accepted dispute reasons.
            resolution_requested (string): 'full_refund' or 'partial_refund'.
            eligible_for_provisional_credit (boolean): Whether provisional credit applies.
            partial_refund_amount (number, optional): The amount, for a partial refund.
        """
        if not transaction_id or not user_id:
            return "Error: Missing required parameters."
        if card_action not in CREDIT_CARD_ACTIONS:
            return f"Error: Invalid card_action. Must be one of: {CREDIT_CARD_ACTIONS}"
        if dispute_reason not in CREDIT_DISPUTE_REASONS:
            return f"Error: Invalid dispute_reason. Must be one of: {CREDIT_DISPUTE_REASONS}"
        if resolution_requested not in RESOLUTIONS:
            return f"Error: Invalid resolution_requested. Must be one of: {RESOLUTIONS}"
        if resolution_requested == "partial_refund" and partial_refund_amount is None:
            return (
                "Error: partial_refund_amount is required when resolution_requested is "
                "'partial_refund'."
            )
        dispute_id = ids.dispute_id(user_id, transaction_id)
        record = {
            "dispute_id": dispute_id,
            "transaction_id": transaction_id,
            "user_id": user_id,
            "card_action": card_action,
            "card_last_4_digits": card_last_4_digits,
            "full_name": full_name,
            "phone": phone,
            "email": email,
            "address": address,
            "contacted_merchant": contacted_merchant,
            "purchase_date": purchase_date,
            "issue_noticed_date": issue_noticed_date,
            "dispute_reason": dispute_reason,
            "resolution_requested": resolution_requested,
            "partial_refund_amount": partial_refund_amount,
            "eligible_for_provisional_credit": eligible_for_provisional_credit,
            "provisional_credit_given": eligible_for_provisional_credit,
            "submitted_at": TODAY,
            "status": "SUBMITTED",
        }
        if not records.add(self.db.transaction_disputes, dispute_id, record):
            return "Error: Dispute may have already been filed for this transaction."
        lines = [
            "Credit card transaction dispute filed successfully. A case has been opened and "
            "will be reviewed within 10 business days.",
            "",
            "Executed: file_credit_card_transaction_dispute_4829",
            f"Dispute ID: {dispute_id}",
            f"Transaction: {transaction_id}",
            f"Reason: {title(dispute_reason)}",
            f"Resolution Requested: {title(resolution_requested)}",
        ]
        if partial_refund_amount:
            lines.append(f"Partial Refund Amount: ${partial_refund_amount:.2f}")
        if eligible_for_provisional_credit:
            lines.append(
                "Provisional Credit: ELIGIBLE - Credit will be applied within 2 business days."
            )
        else:
            lines.append("Provisional Credit: Not eligible at this time.")
        return "\n".join(lines)

    @discoverable(ToolKind.WRITE, AGENT_CLASS)
    def file_debit_card_transaction_dispute_6281(
        self,
        transaction_id: str,
        account_id: str,
        card_id: str,
        user_id: str,
        dispute_category: str,
        transaction_date: str,
        discovery_date: str,
        disputed_amount: float,
        transaction_type: str,
        card_in_possession: bool,
        pin_compromised: str,
        contacted_merchant: bool,
        police_report_filed: bool,
        written_statement_provided: bool,
        provisional_credit_eligible: bool,
        customer_max_liability_amount: float,
        card_action: str,
    ) -> str:
        """Open a Regulation E dispute on a debit card transaction.

        Args:
            transaction_id (string): The disputed transaction.
            account_id (string): The checking account of the card.
            card_id (string): The debit card.
            user_id (string): The customer's id.
            dispute_category (string): One of the accepted dispute categories.
            transaction_date (string): Transaction date, MM/DD/YYYY.
            discovery_date (string): When the problem was noticed, MM/DD/YYYY.
            disputed_amount (number): The disputed amount in dollars.
            transaction_type (string): One of the accepted transaction types.
            card_in_possession (boolean): Whether the customer still has the card.
            pin_compromised (string): 'yes_shared', 'yes_observed', 'no' or 'unknown'.
            contacted_merchant (boolean): Whether the merchant was contacted first.
            police_report_filed (boolean): Whether a police report was filed.
            written_statement_provided (boolean): Whether a written statement was given.
            provisional_credit_eligible (boolean): Whether provisional credit applies.
            customer_max_liability_amount (number): The customer's maximum liability, -1 if
                unlimited.
            card_action (string): 'keep_active', 'freeze_pending_investigation' or
                'close_and_reissue'.
        """
        required = [
            transaction_id,
            account_id,
            card_id,
            user_id,
            dispute_category,
            transaction_date,
            discovery_date,
            disputed_amount,
            transaction_type,
            pin_compromised,
            card_action,
        ]
        if not all(required):
            return "Error: Missing required parameters."
        if customer_max_liability_amount is None:
            return "Error: customer_max_liability_amount is required."
        flags = (card_in_possession, contacted_merchant, police_report_filed)
        if any(flag is None for flag in flags) or written_statement_provided is None:
            return (
                "Error: card_in_possession, contacted_merchant, police_report_filed, and "
                "written_statement_provided are required boolean fields."
            )
        if dispute_category not in DEBIT_CATEGORIES:
            return f"Error: Invalid dispute_category. Must be one of: {DEBIT_CATEGORIES}"
        if transaction_type not in DEBIT_TRANSACTION_TYPES:
            return f"Error: Invalid transaction_type. Must be one of: {DEBIT_TRANSACTION_TYPES}"
        if pin_compromised not in PIN_STATES:
            return f"Error: Invalid pin_compromised. Must be one of: {PIN_STATES}"
        if card_action not in DEBIT_CARD_ACTIONS:
            return f"Error: Invalid card_action. Must be one of: {DEBIT_CARD_ACTIONS}"
        if disputed_amount <= 0:
            return "Error: disputed_amount must be a positive number."
        dispute_id = ids.dispute_id(user_id, transaction_id)
        fraud = dispute_category in FRAUD_CATEGORIES
        pin_shared = pin_compromised == "yes_shared"
        record = {
            "dispute_id": dispute_id,
            "transaction_id": transaction_id,
            "account_id": account_id,
            "card_id": card_id,
            "user_id": user_id,
            "dispute_category": dispute_category,
            "transaction_date": transaction_date,
            "discovery_date": discovery_date,
            "disputed_amount": disputed_amount,
            "transaction_type": transaction_type,
            "card_in_possession": card_in_possession,
            "pin_compromised": pin_compromised,
            "contacted_merchant": contacted_merchant,
            "police_report_filed": police_report_filed,
            "written_statement_provided": written_statement_provided,
            "provisional_credit_eligible": provisional_credit_eligible,
            "provisional_credit_issued": provisional_credit_eligible,
            "provisional_credit_amount": disputed_amount if provisional_credit_eligible else None,
            "customer_max_liability_amount": customer_max_liability_amount,
            "card_action": card_action,
            "is_fraud_category": fraud,
            "pin_shared_voluntarily": pin_shared,
            "submitted_at": TODAY,
            "status": "OPEN",
        }
        if not records.add(self.db.debit_card_disputes, dispute_id, record):
            return "Error: Dispute may have already been filed for this transaction."
        lines = [
            f"Dispute ID: {dispute_id}",
            f"Transaction: {transaction_id}",
            f"Account: {account_id}",
            f"Category: {title(dispute_category)}",
            f"Disputed Amount: ${disputed_amount:.2f}",
            f"Card Action: {title(card_action)}",
        ]
        if provisional_credit_eligible:
            lines.append(
                f"Provisional Credit: ISSUED - ${disputed_amount:.2f} credited within 10 "
                f"business days per Regulation E."
            )
        else:
            lines.append(
                "Provisional Credit: Not eligible - see Debit Card Provisional Credit "
                "Guidelines for details."
            )
        if pin_shared:
            lines.append(
                "WARNING: Customer indicated PIN was shared voluntarily. This may affect "
                "liability determination."
            )
        if fraud and not police_report_filed and disputed_amount > 500:
            lines.append(
                "RECOMMENDATION: For fraud disputes over $500, filing a police report is "
                "recommended."
            )
        return "\n".join(lines)

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_user_dispute_history_7291(self, user_id: str) -> str:
        """A customer's credit card transaction disputes.

        Args:
            user_id (string): The customer's id.
        """
        if not user_id:
            return missing("user_id")
        return history(
            "User transaction dispute history retrieved successfully.",
            "get_user_dispute_history_7291",
            f"Transaction dispute history for user {user_id}:",
            records.lookup(self.db, "transaction_disputes", "user_id", user_id),
            "\nNo transaction disputes found for this user.",
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_debit_dispute_status_7483(self, user_id: str) -> str:
        """A customer's debit card disputes with their status and provisional credit.

        Args:
            user_id (string): The customer's id.
        """
        if not user_id:
            return missing("user_id")
        return history(
            "Debit card dispute history retrieved successfully.",
            "get_debit_dispute_status_7483",
            f"Debit card dispute history for user {user_id}:",
            records.lookup(self.db, "debit_card_disputes", "user_id", user_id),
            "\nNo debit card disputes found for this user.",
        )

    @discoverable(ToolKind.READ, AGENT_CLASS)
    def get_atm_deposit_images_8473(self, transaction_id: str) -> str:
        """The envelope and check images of a deposit made at a Rho-Bank ATM.

        Args:
            transaction_id (string): The ATM deposit transaction.
        """
        if not transaction_id:
            return missing("transaction_id")
        history_table = self.db.bank_account_transaction_history.data
        if transaction_id not in history_table:
            return f"Error: Transaction '{transaction_id}' not found."
        txn = history_table.peek(transaction_id)
        if txn.get("type") != "atm_deposit":
            return (
                f"Error: Transaction '{transaction_id}' is not an ATM deposit. This tool only "
                f"works for ATM deposit transactions."
            )
        description = txn.get("description", "")
        if "RHO-BANK" not in description.upper() and "RHOBANK" not in description.upper():
            return (
                f"Error: Transaction '{transaction_id}' is from a third-party ATM. Deposit "
                f"images are only available for Rho-Bank ATM deposits. For third-party ATM "
                f"disputes, a chargeback request must be submitted to the ATM network."
            )
        header = (
            "ATM Deposit Image Retrieval Results\n"
            "=====================================\n"
            f"Transaction ID: {transaction_id}\n"
        )
        if transaction_id in IMAGES:
            atm, scan, note = IMAGES[transaction_id]
            return (
                f"{header}ATM: {atm}\nDeposit Date: {txn.get('date', 'Unknown')}\n\n"
                f"{scan}\n\n--- VERIFICATION NOTES ---\n{note}\n"
            )
        return (
            f"{header}ATM: {description}\nDeposit Date: {txn.get('date', 'Unknown')}\n"
            f"Amount Recorded: ${abs(txn.get('amount', 0)):.2f}\n\n"
            "--- IMAGE STATUS ---\n"
            "Status: IMAGES NOT AVAILABLE\n"
            "Reason: Deposit images for this transaction have either expired (older than 90 "
            "days) or were not captured by the ATM system.\n\n"
            "For deposits without available images, the dispute will proceed based on customer "
            "statement and ATM journal records only. Investigation timeline may be extended.\n"
        )
