"""Agent-side tools of the telecom domain: the carrier's customer, line and billing records.

Lookups walk the tables in order and check arguments in the same order as the reference, so
that bad arguments fail with the same message and leave the same state behind.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from tau_mcp.servers.domains.telecom.clock import TODAY, first_of_next_month, last_of_month
from tau_mcp.servers.domains.telecom.models import (
    Bill,
    BillStatus,
    Customer,
    Device,
    Line,
    LineItem,
    LineStatus,
    Plan,
)
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, assertion, tool


class TelecomTools(Toolkit):
    """What a carrier's support agent can look up and change."""

    # --- customers --------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def get_customer_by_phone(self, phone_number: str) -> Customer:
        """Find the customer who owns a phone number, either as their contact number or as the
        number of one of their lines.

        Args:
            phone_number: Phone number to look up, e.g. "555-123-2002".
        """
        for customer in self.db.customers:
            if customer.phone_number == phone_number:
                return customer
            for line_id in customer.line_ids:
                line = self._get_line_by_id(line_id)
                if line and line.phone_number == phone_number:
                    return customer
        raise ValueError(f"Customer with phone number {phone_number} not found")

    @tool(ToolKind.READ)
    def get_customer_by_id(self, customer_id: str) -> Customer:
        """Fetch a customer's full record (contact details, lines, bills, payment methods).

        Args:
            customer_id: Customer id, e.g. "C1001".
        """
        for customer in self.db.customers:
            if customer.customer_id == customer_id:
                return customer
        raise ValueError(f"Customer with ID {customer_id} not found")

    @tool(ToolKind.READ)
    def get_customer_by_name(self, full_name: str, dob: str) -> list[Customer]:
        """List the customers with this full name (case-insensitive) and date of birth; use it
        to identify a caller who does not know their phone number or customer id.

        Args:
            full_name: Customer's full name, e.g. "John Smith".
            dob: Date of birth as YYYY-MM-DD.
        """
        return [
            customer
            for customer in self.db.customers
            if customer.full_name.lower() == full_name.lower() and customer.date_of_birth == dob
        ]

    @tool(ToolKind.READ)
    def get_details_by_id(self, id: str) -> dict[str, Any]:  # noqa: A002 - the tool's parameter name
        """Fetch any record by its id; the first letter says what it is: L line, D device,
        B bill, C customer, P plan.

        Args:
            id: The record's id, e.g. "L1002", "D1001", "B1003", "C1001" or "P1002".
        """
        if id.startswith("L"):
            return self._get_line_by_id(id)
        if id.startswith("D"):
            return self._get_device_by_id(id)
        if id.startswith("B"):
            return self._get_bill_by_id(id)
        if id.startswith("C"):
            return self.get_customer_by_id(id)
        if id.startswith("P"):
            return self._get_plan_by_id(id)
        raise ValueError(f"Unknown ID format or type: {id}")

    # --- lines ------------------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def suspend_line(self, customer_id: str, line_id: str, reason: str) -> dict[str, Any]:
        """Suspend an active line of a customer (at most six months; a monthly holding fee
        applies). Fails unless the line is active.

        Args:
            customer_id: Id of the customer who owns the line.
            line_id: Id of the line to suspend.
            reason: Why the line is being suspended.
        """
        line = self._get_target_line(customer_id, line_id)
        if line.status != LineStatus.ACTIVE:
            raise ValueError("Line must be active to suspend")
        line.status = LineStatus.SUSPENDED
        line.suspension_start_date = TODAY
        return {
            "message": "Line suspended successfully. $5/month holding fee will apply.",
            "line": line,
        }

    @tool(ToolKind.WRITE)
    def resume_line(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Reactivate a customer's suspended (or not yet activated) line.

        Args:
            customer_id: Id of the customer who owns the line.
            line_id: Id of the line to reactivate.
        """
        line = self._get_target_line(customer_id, line_id)
        if line.status not in (LineStatus.SUSPENDED, LineStatus.PENDING_ACTIVATION):
            raise ValueError("Line must be suspended to resume")
        line.status = LineStatus.ACTIVE
        line.suspension_start_date = None
        return {"message": "Line resumed successfully", "line": line}

    @tool(ToolKind.READ)
    def get_data_usage(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Show a line's mobile data this billing cycle: data used, the plan's allowance, extra
        data bought (refuelled) and the day the cycle ends.

        Args:
            customer_id: Id of the customer who owns the line.
            line_id: Id of the line.
        """
        line = self._get_target_line(customer_id, line_id)
        plan = self._get_plan_by_id(line.plan_id)
        return {
            "line_id": line_id,
            "data_used_gb": line.data_used_gb,
            "data_limit_gb": plan.data_limit_gb,
            "data_refueling_gb": line.data_refueling_gb,
            "cycle_end_date": _cycle_end(TODAY),
        }

    @tool(ToolKind.WRITE)
    def enable_roaming(self, customer_id: str, line_id: str) -> dict[str, Any]:
        """Turn on international roaming for a customer's line (carrier side).

        Args:
            customer_id: Id of the customer who owns the line.
            line_id: Id of the line.
        """
        line = self._get_target_line(customer_id, line_id)
        if line.roaming_enabled:
            return "Roaming was already enabled"
        line.roaming_enabled = True
        return "Roaming enabled successfully"

    @tool(ToolKind.WRITE)
    def disable_roaming(self, customer_id: str, line_id: str) -> str:
        """Turn off international roaming for a customer's line (carrier side).

        Args:
            customer_id: Id of the customer who owns the line.
            line_id: Id of the line.
        """
        line = self._get_target_line(customer_id, line_id)
        if not line.roaming_enabled:
            return "Roaming was already disabled"
        line.roaming_enabled = False
        return "Roaming disabled successfully"

    @tool(ToolKind.WRITE)
    def refuel_data(self, customer_id: str, line_id: str, gb_amount: float) -> dict[str, Any]:
        """Buy extra mobile data for a customer's line this cycle; the plan's per-GB refuel
        price is charged to the customer's next (draft) bill.

        Args:
            customer_id: Id of the customer who owns the line.
            line_id: Id of the line to add data to.
            gb_amount: Gigabytes to add; must be positive.
        """
        line = self._get_target_line(customer_id, line_id)
        if gb_amount <= 0:
            raise ValueError("Refuel amount must be positive")
        plan = self._get_plan_by_id(line.plan_id)
        price = plan.data_refueling_price_per_gb
        charge = gb_amount * price
        line.data_refueling_gb += gb_amount
        self._apply_one_time_charge(
            customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB"
        )
        return {
            "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
            "new_data_refueling_gb": line.data_refueling_gb,
            "charge": charge,
        }

    # --- billing ----------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def get_bills_for_customer(self, customer_id: str, limit: int = 12) -> list[Bill]:
        """List a customer's bills, newest issue date first.

        Args:
            customer_id: Id of the customer.
            limit: At most this many bills are returned (default 12).
        """
        customer = self.get_customer_by_id(customer_id)
        bills = [self._get_bill_by_id(bill_id) for bill_id in customer.bill_ids]
        bills.sort(key=lambda bill: bill.issue_date, reverse=True)
        return bills[:limit]

    @tool(ToolKind.WRITE)
    def send_payment_request(self, customer_id: str, bill_id: str) -> str:
        """Ask the customer to pay one of their bills; the request shows up on their phone and
        the bill becomes "Awaiting Payment". Refused while another bill of theirs awaits
        payment. It does not check whether the bill is already paid: look first.

        Args:
            customer_id: Id of the customer who owns the bill.
            bill_id: Id of the bill to be paid.
        """
        customer = self.get_customer_by_id(customer_id)
        if self._get_bills_awaiting_payment(customer):
            raise ValueError("A bill is already awaiting payment for this customer")
        if bill_id not in customer.bill_ids:
            raise ValueError(f"Bill {bill_id} not found for customer {customer_id}")
        bill = self._get_bill_by_id(bill_id)
        bill.status = BillStatus.AWAITING_PAYMENT
        return f"Payment request sent to the customer for bill {bill.bill_id}"

    # --- hand-off ---------------------------------------------------------------------------
    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the customer over to a human agent. Do it only when the customer asks for a
        human, or when the policy and your tools cannot resolve their problem.

        Args:
            summary: The customer's problem and what was tried, for the human agent.
        """
        return "Transfer successful"

    # --- record lookups (helpers) -----------------------------------------------------------
    def _get_line_by_phone(self, phone_number: str) -> Line:
        for line in self.db.lines:
            if line.phone_number == phone_number:
                return line
        raise ValueError(f"Line with phone number {phone_number} not found")

    def _get_line_by_id(self, line_id: str) -> Line:
        for line in self.db.lines:
            if line.line_id == line_id:
                return line
        raise ValueError(f"Line with ID {line_id} not found")

    def _get_plan_by_id(self, plan_id: str) -> Plan:
        for plan in self.db.plans:
            if plan.plan_id == plan_id:
                return plan
        raise ValueError(f"Plan with ID {plan_id} not found")

    def _get_device_by_id(self, device_id: str) -> Device:
        for device in self.db.devices:
            if device.device_id == device_id:
                return device
        raise ValueError(f"Device with ID {device_id} not found")

    def _get_bill_by_id(self, bill_id: str) -> Bill:
        for bill in self.db.bills:
            if bill.bill_id == bill_id:
                return bill
        raise ValueError(f"Bill with ID {bill_id} not found")

    def _get_target_line(self, customer_id: str, line_id: str) -> Line:
        """A line, only if it belongs to the customer (customer checked first)."""
        customer = self.get_customer_by_id(customer_id)
        if line_id not in customer.line_ids:
            raise ValueError(f"Line {line_id} not found for customer {customer_id}")
        return self._get_line_by_id(line_id)

    def get_available_plan_ids(self) -> list[str]:
        return [plan.plan_id for plan in self.db.plans]

    def _get_bills_awaiting_payment(self, customer: Customer) -> list[Bill]:
        bills = (self._get_bill_by_id(bill_id) for bill_id in customer.bill_ids)
        return [bill for bill in bills if bill.status == BillStatus.AWAITING_PAYMENT]

    def _set_bill_to_paid(self, bill_id: str) -> str:
        self._get_bill_by_id(bill_id).status = BillStatus.PAID
        return f"Bill {bill_id} set to paid"

    def _apply_one_time_charge(self, customer_id: str, amount: float, description: str) -> None:
        """Add a charge (or, if negative, a credit) to the customer's draft bill, opening a
        draft bill for next month when there is none."""
        customer = self.get_customer_by_id(customer_id)
        draft = None
        for bill_id in customer.bill_ids:
            bill = self._get_bill_by_id(bill_id)
            if bill.status == BillStatus.DRAFT:
                draft = bill
                break
        if draft is None:
            draft = self._open_draft_bill(customer)
        draft.line_items.append(
            LineItem(
                description=description,
                amount=amount,
                date=TODAY,
                item_type="Credit" if amount < 0 else "Charge",
            )
        )
        draft.total_due += amount

    def _open_draft_bill(self, customer: Customer) -> Bill:
        start = first_of_next_month(TODAY)
        bill = Bill(
            bill_id=self._new_bill_id(),
            customer_id=customer.customer_id,
            period_start=start,
            period_end=last_of_month(start),
            issue_date=start,
            total_due=0,
            due_date=start + timedelta(days=14),
            status=BillStatus.DRAFT,
        )
        self.db.bills.append(bill)
        customer.bill_ids.append(bill.bill_id)
        return bill

    def _new_bill_id(self) -> str:
        """`B` and eight hex digits, like the reference's random ids, but reproducible."""
        if self.episode is None:
            raise ValueError("bill ids can only be minted inside an episode")
        return "B" + self.episode.mint_id("bill")[:8]

    # --- task setup (initialization actions) ------------------------------------------------
    def set_data_usage(self, customer_id: str, line_id: str, data_used_gb: float) -> str:
        line = self._get_target_line(customer_id, line_id)
        line.data_used_gb = data_used_gb
        return f"Data usage set to {data_used_gb} GB for line {line_id}"

    def suspend_line_for_overdue_bill(
        self, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
    ) -> str:
        """Put the line in the state of a customer who did not pay last month's bill: an
        overdue bill for last month's plan price, and the line suspended."""
        line = self._get_line_by_id(line_id)
        if line.status != LineStatus.ACTIVE:
            raise ValueError("Line must be active to suspend for unpaid bill")
        plan = self._get_plan_by_id(line.plan_id)
        amount = plan.price_per_month
        if amount <= 0:
            raise ValueError("Amount must be positive for overdue bill")
        customer = self.get_customer_by_id(customer_id)
        for bill_id in customer.bill_ids:
            if self._get_bill_by_id(bill_id).status == BillStatus.OVERDUE:
                raise ValueError("Customer already has an overdue bill")
        last_month_end = TODAY.replace(day=1) - timedelta(days=1)
        last_month_start = last_month_end.replace(day=1)
        bill = Bill(
            bill_id=new_bill_id,
            customer_id=customer_id,
            period_start=last_month_start,
            period_end=last_month_end,
            issue_date=last_month_start,
            total_due=0,
            due_date=last_month_start + timedelta(days=14),
            status=BillStatus.OVERDUE,
        )
        bill.line_items.append(
            LineItem(
                description=f"Charge for line {line.line_id}",
                amount=amount,
                date=TODAY,
                item_type="Charge" if amount > 0 else "Credit",
            )
        )
        bill.total_due += amount
        self.db.bills.append(bill)
        customer.bill_ids.append(new_bill_id)
        line.status = LineStatus.SUSPENDED
        line.suspension_start_date = TODAY
        if contract_ended:
            line.contract_end_date = last_month_end
        return (
            f"Line {line_id} suspended for unpaid bill {new_bill_id}. "
            f"Contract ended: {contract_ended}"
        )

    # --- environment assertions -------------------------------------------------------------
    @assertion
    def assert_data_refueling_amount(
        self, customer_id: str, line_id: str, expected_amount: float
    ) -> bool:
        line = self._get_target_line(customer_id, line_id)
        return abs(line.data_refueling_gb - expected_amount) < 1e-6

    @assertion
    def assert_line_status(
        self, customer_id: str, line_id: str, expected_status: LineStatus
    ) -> bool:
        return self._get_target_line(customer_id, line_id).status == expected_status

    @assertion
    def assert_overdue_bill_exists(self, customer_id: str, overdue_bill_id: str) -> bool:
        customer = self.get_customer_by_id(customer_id)
        if overdue_bill_id not in customer.bill_ids:
            raise ValueError(f"Overdue bill {overdue_bill_id} not found")
        if self._get_bill_by_id(overdue_bill_id).status != BillStatus.OVERDUE:
            raise ValueError(f"Overdue bill {overdue_bill_id} is not overdue")
        return True

    @assertion
    def assert_no_overdue_bill(self, overdue_bill_id: str) -> bool:
        """True when the bill is gone or paid."""
        try:
            bill = self._get_bill_by_id(overdue_bill_id)
        except ValueError:
            return True
        return bill.status == BillStatus.PAID


def _cycle_end(today: date) -> date:
    """Last day of the current billing cycle (cycles follow calendar months)."""
    return last_of_month(today.replace(day=1))
