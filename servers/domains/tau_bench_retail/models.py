"""The original τ-bench retail data: orders, products and users, as `json.load` reads them.

Field order is the data files' key order (a record dumps in it, and tools print records); the
types are those of the data as loaded (a gift card's balance is an int until a refund or a payment
makes it a float). What a tool writes afterwards is kept as written, whatever its type, and keys
a tool adds (`cancel_reason`, `exchange_items`, `return_items`, ...) go after the others, as in
the original's dicts (see `tau_bench.records`).
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from tau_mcp.servers.domains.tau_bench.records import Address, Name, Record


class Variant(Record):
    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(Record):
    name: str
    product_id: str
    variants: dict[str, Variant]


class CreditCard(Record):
    source: Literal["credit_card"]
    brand: str
    last_four: str
    id: str


class Paypal(Record):
    source: Literal["paypal"]
    id: str


class GiftCard(Record):
    source: Literal["gift_card"]
    balance: int | float
    id: str


PaymentMethod = Annotated[Union[CreditCard, Paypal, GiftCard], Field(discriminator="source")]  # noqa: UP007


class User(Record):
    name: Name
    address: Address
    email: str
    payment_methods: dict[str, PaymentMethod]
    orders: list[str]


class OrderItem(Record):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class Fulfillment(Record):
    tracking_id: list[str]
    item_ids: list[str]


class Payment(Record):
    transaction_type: str
    amount: float
    payment_method_id: str


class Order(Record):
    order_id: str
    user_id: str
    address: Address
    items: list[OrderItem]
    fulfillments: list[Fulfillment]
    status: str
    payment_history: list[Payment]


class RetailData(BaseModel):
    """The original's `env.data` for retail, in its key order."""

    model_config = ConfigDict(extra="forbid")

    orders: dict[str, Order]
    products: dict[str, Product]
    users: dict[str, User]
