"""Carrier-side records of the telecom domain: plans, customers, lines, devices and bills.

Class names, field names, field order, types and defaults follow the reference, because tool
output (JSON dumps, validation messages) and database hashes depend on them.
"""

from __future__ import annotations

import datetime
from enum import Enum

from pydantic import BaseModel, ConfigDict, Field

from tau_mcp.servers.domains.telecom.clock import ACCOUNT_EPOCH


class Strict(BaseModel):
    """Records reject unknown fields, as the reference's do."""

    model_config = ConfigDict(extra="forbid")


class Address(Strict):
    street: str
    city: str
    state: str
    zip_code: str


class Plan(Strict):
    plan_id: str
    name: str
    data_limit_gb: float
    price_per_month: float
    data_refueling_price_per_gb: float


class DeviceType(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    PHONE = "phone"
    ROUTER = "router"
    TABLET = "tablet"
    WATCH = "watch"
    OTHER = "other"


class Device(Strict):
    device_id: str
    device_type: DeviceType
    model: str
    imei: str | None = None
    is_esim_capable: bool
    activated: bool = False
    activation_date: datetime.datetime | None = None
    last_esim_transfer_date: datetime.datetime | None = None


class LineStatus(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    PENDING_ACTIVATION = "Pending Activation"
    CLOSED = "Closed"


class Line(Strict):
    line_id: str
    phone_number: str
    status: LineStatus = LineStatus.PENDING_ACTIVATION
    plan_id: str
    device_id: str | None = None
    data_used_gb: float = 0.0
    data_refueling_gb: float = 0.0
    roaming_enabled: bool = False
    contract_end_date: datetime.date | None = None
    last_plan_change_date: datetime.date | None = None
    last_sim_replacement_date: datetime.date | None = None
    suspension_start_date: datetime.date | None = None


class LineItem(Strict):
    description: str
    amount: float
    date: datetime.date
    item_type: str


class BillStatus(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    DRAFT = "Draft"
    ISSUED = "Issued"
    AWAITING_PAYMENT = "Awaiting Payment"
    PAID = "Paid"
    OVERDUE = "Overdue"
    DISPUTED = "Disputed"


class Bill(Strict):
    bill_id: str
    customer_id: str
    period_start: datetime.date
    period_end: datetime.date
    issue_date: datetime.date
    total_due: float
    due_date: datetime.date
    line_items: list[LineItem] = Field(default_factory=list)
    status: BillStatus = BillStatus.DRAFT


class AccountStatus(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    PENDING_VERIFICATION = "Pending Verification"
    CLOSED = "Closed"


class PaymentMethodType(str, Enum):  # noqa: UP042 - str() and reprs must stay the reference\'s
    CREDIT_CARD = "Credit Card"
    DEBIT_CARD = "Debit Card"
    PAYPAL = "PayPal"


class PaymentMethod(Strict):
    method_type: PaymentMethodType
    account_number_last_4: str
    expiration_date: str


class Customer(Strict):
    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str
    address: Address
    account_status: AccountStatus = AccountStatus.PENDING_VERIFICATION
    payment_methods: list[PaymentMethod] = Field(default_factory=list)
    line_ids: list[str] = Field(default_factory=list)
    bill_ids: list[str] = Field(default_factory=list)
    # The reference's default is a date (not a datetime) and is not validated: kept as is,
    # since it changes the dumped text.
    created_at: datetime.datetime = ACCOUNT_EPOCH  # type: ignore[assignment]
    last_extension_date: datetime.date | None = None
    goodwill_credit_used_this_year: float = 0.0


class TelecomDB(Strict):
    """The carrier's database. Tables are lists, as in the reference (paths and hashes use
    list positions)."""

    plans: list[Plan] = Field(default_factory=list)
    customers: list[Customer] = Field(default_factory=list)
    lines: list[Line] = Field(default_factory=list)
    bills: list[Bill] = Field(default_factory=list)
    devices: list[Device] = Field(default_factory=list)
