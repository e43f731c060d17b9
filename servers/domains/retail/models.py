"""Retail domain records: a product catalogue, customers with payment methods, and orders.

Class names, field names, field order and types follow the reference data model, because
validation messages name the classes and rendered JSON follows the field order.
"""

from __future__ import annotations

from typing import Literal, Union

from pydantic import BaseModel, ConfigDict


class Variant(BaseModel):
    """One purchasable version of a product (an "item"): its options, stock flag and price."""

    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class Product(BaseModel):
    """A product type and all of its variants, keyed by item id."""

    name: str
    product_id: str
    variants: dict[str, Variant]


class UserName(BaseModel):
    first_name: str
    last_name: str


class UserAddress(BaseModel):
    """A postal address, used both as a customer's default and as an order's shipping address."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class PaymentMethodBase(BaseModel):
    source: str
    id: str


class CreditCard(PaymentMethodBase):
    source: Literal["credit_card"]
    brand: str
    last_four: str


class Paypal(PaymentMethodBase):
    source: Literal["paypal"]


class GiftCard(PaymentMethodBase):
    """A stored-value card: the only payment method whose balance the tools track."""

    source: Literal["gift_card"]
    balance: float
    id: str


PaymentMethod = Union[CreditCard, GiftCard, Paypal]  # noqa: UP007 - same union order as the data


class User(BaseModel):
    user_id: str
    name: UserName
    address: UserAddress
    email: str
    payment_methods: dict[str, PaymentMethod]
    orders: list[str]


class OrderFullfilment(BaseModel):
    """Shipments of an order (the class name keeps the reference's spelling)."""

    tracking_id: list[str]
    item_ids: list[str]


class OrderItem(BaseModel):
    """A bought item, with the price and options it had at purchase time."""

    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


OrderPaymentType = Literal["payment", "refund"]


class OrderPayment(BaseModel):
    transaction_type: OrderPaymentType
    amount: float
    payment_method_id: str


OrderStatus = Literal[
    "processed",
    "pending",
    "pending (item modified)",
    "delivered",
    "cancelled",
    "exchange requested",
    "return requested",
]

CancelReason = Literal["no longer needed", "ordered by mistake"]


class Order(BaseModel):
    """An order with its lifecycle status and, once requested, exchange or return details."""

    order_id: str
    user_id: str
    address: UserAddress
    items: list[OrderItem]
    status: OrderStatus
    fulfillments: list[OrderFullfilment]
    payment_history: list[OrderPayment]
    cancel_reason: CancelReason | None = None
    exchange_items: list[str] | None = None
    exchange_new_items: list[str] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None
    return_items: list[str] | None = None
    return_payment_method_id: str | None = None


class RetailDB(BaseModel):
    """The whole retail database: catalogue, customers and orders, each keyed by id."""

    model_config = ConfigDict(extra="forbid")

    products: dict[str, Product]
    users: dict[str, User]
    orders: dict[str, Order]
