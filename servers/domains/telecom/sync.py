"""Keeping the phone and the carrier's records consistent after every call.

The phone's owner and number come from the task's setup. Once they are known, the carrier's
line decides whether the phone has service, may roam and has data left; a bill the owner paid
on the phone becomes paid at the carrier; and a bill the carrier marked as awaiting payment
shows up on the phone as a payment request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tau_mcp.servers.domains.telecom.models import LineStatus
from tau_mcp.servers.domains.telecom.user_models import PaymentRequest

if TYPE_CHECKING:
    from tau_mcp.servers.engine.domain import EpisodeView


def sync_phone_with_carrier(episode: EpisodeView) -> None:
    carrier = episode.agent_tools
    phone = episode.user_tools
    where = phone.db.surroundings
    number = where.phone_number
    if number is None:
        return
    line = carrier._get_line_by_phone(number)
    where.line_active = line.status == LineStatus.ACTIVE
    where.roaming_allowed = bool(line.roaming_enabled)
    plan = carrier._get_plan_by_id(line.plan_id)
    where.mobile_data_usage_exceeded = (
        line.data_used_gb >= plan.data_limit_gb + line.data_refueling_gb
    )

    request = where.payment_request
    if request is not None and request.paid:
        carrier._set_bill_to_paid(request.bill_id)
        where.payment_request = None

    if where.payment_request is None:
        customer = carrier.get_customer_by_phone(number)
        waiting = carrier._get_bills_awaiting_payment(customer)
        if waiting:
            bill = waiting[0]
            where.payment_request = PaymentRequest(bill_id=bill.bill_id, amount_due=bill.total_due)
