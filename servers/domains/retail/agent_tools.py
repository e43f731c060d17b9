"""Agent-side tools of the retail domain.

The tools receive the caller's raw arguments, and every check runs in the reference's order with
the same plain Python operations, so a wrong type fails with the same message, and a call that
fails half-way leaves the same partial changes behind.
"""

from __future__ import annotations

import json

from tau_mcp.servers.domains.retail.models import (
    GiftCard,
    Order,
    OrderPayment,
    PaymentMethod,
    Product,
    User,
    UserAddress,
    Variant,
)
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, tool

_CANCEL_REASONS = frozenset({"no longer needed", "ordered by mistake"})
_CALCULATOR_CHARS = "0123456789+-*/(). "


def _round_money(value: float) -> float:
    return round(value, 2)


def _has_enough_of_each(wanted: list[str], available: list[str]) -> str | None:
    """The first id asked for more often than `available` holds it, or None.

    Uses `count` on the caller's value itself, as the reference does: a string argument is then
    checked character by character."""
    for item_id in wanted:
        if wanted.count(item_id) > available.count(item_id):
            return item_id
    return None


def _first_item_with_id(order: Order, item_id: str):
    return next((line for line in order.items if line.item_id == item_id), None)


class RetailTools(Toolkit):
    """Customer service tools for an online store: look up customers, orders and products, and
    cancel, modify, return or exchange orders."""

    # --- lookups shared by the tools -------------------------------------------------------
    def _order(self, order_id: str, writable: bool = True) -> Order:
        orders = self.db.orders
        if order_id not in orders:
            raise ValueError("Order not found")
        return orders[order_id] if writable else orders.peek(order_id)

    def _user(self, user_id: str, writable: bool = True) -> User:
        users = self.db.users
        if user_id not in users:
            raise ValueError("User not found")
        return users[user_id] if writable else users.peek(user_id)

    def _product(self, product_id: str) -> Product:
        products = self.db.products
        if product_id not in products:
            raise ValueError("Product not found")
        return products.peek(product_id)

    def _variant_of(self, product_id: str, item_id: str) -> Variant:
        variants = self._product(product_id).variants
        if item_id not in variants:
            raise ValueError("Variant not found")
        return variants[item_id]

    def _payment_method(self, user_id: str, payment_method_id: str) -> PaymentMethod:
        """A customer's payment method, from the episode's own (writable) copy of the customer."""
        methods = self._user(user_id).payment_methods
        if payment_method_id not in methods:
            raise ValueError("Payment method not found")
        return methods[payment_method_id]

    # --- generic tools ---------------------------------------------------------------------
    @tool(ToolKind.GENERIC)
    def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression and return the result rounded to 2 decimals.

        Args:
            expression: Arithmetic using digits, + - * /, parentheses, dots and spaces, e.g. '(19.99 + 5) * 2'.
        """
        if not all(char in _CALCULATOR_CHARS for char in expression):
            raise ValueError("Invalid characters in expression")
        value = eval(expression, {"__builtins__": None}, {})  # noqa: S307 - characters checked above
        return str(_round_money(float(value)))

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the customer over to a human agent. Do this only when the customer asks for a
        human, or when the policy and your tools cannot resolve the request.

        Args:
            summary: A short account of the customer's issue for the human agent.
        """
        return "Transfer successful"

    # --- read tools ------------------------------------------------------------------------
    @tool(ToolKind.READ)
    def find_user_id_by_email(self, email: str) -> str:
        """Look up a customer's user id from their email address (case-insensitive). Prefer this
        way of identifying a customer; fails when no customer has that email.

        Args:
            email: The customer's email address, e.g. 'jane.doe@example.com'.
        """
        for user_id, user in self.db.users.items():
            if user.email.lower() == email.lower():
                return user_id
        raise ValueError("User not found")

    @tool(ToolKind.READ)
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Look up a customer's user id from their first name, last name (both case-insensitive)
        and zip code. Use it only when the customer cannot be found by email.

        Args:
            first_name: The customer's first name, e.g. 'Jane'.
            last_name: The customer's last name, e.g. 'Doe'.
            zip: The zip code of the customer's default address, e.g. '90210'.
        """
        for user_id, user in self.db.users.items():
            if (
                user.name.first_name.lower() == first_name.lower()
                and user.name.last_name.lower() == last_name.lower()
                and user.address.zip == zip
            ):
                return user_id
        raise ValueError("User not found")

    @tool(ToolKind.READ)
    def get_user_details(self, user_id: str) -> User:
        """Show a customer's profile: name, default address, email, payment methods (with gift
        card balances) and the ids of their orders.

        Args:
            user_id: The customer's user id, e.g. 'jane_doe_1234'.
        """
        return self._user(user_id, writable=False)

    @tool(ToolKind.READ)
    def get_order_details(self, order_id: str) -> Order:
        """Show an order: status, shipping address, items with prices and options, shipments and
        payment history.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
        """
        return self._order(order_id, writable=False)

    @tool(ToolKind.READ)
    def get_product_details(self, product_id: str) -> Product:
        """Show a product type and all of its items (variants) with their options, availability
        and price.

        Args:
            product_id: The product id, e.g. '1234567890' (not an item id).
        """
        return self._product(product_id)

    @tool(ToolKind.READ)
    def get_item_details(self, item_id: str) -> Variant:
        """Show one item (a specific variant of a product): options, availability and price.

        Args:
            item_id: The item id, e.g. '1234567890' (not a product id).
        """
        for _, product in self.db.products.items():
            if item_id in product.variants:
                return product.variants[item_id]
        raise ValueError("Item not found")

    @tool(ToolKind.READ)
    def list_all_product_types(self) -> str:
        """List every product type the store sells as a JSON object mapping product name to
        product id, sorted by name. Use a product id with get_product_details to see its items."""
        names = {product.name: product.product_id for product in self.db.products.values()}
        return json.dumps(names, sort_keys=True)

    # --- pending orders --------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def cancel_pending_order(self, order_id: str, reason: str) -> Order:
        """Cancel an order that is still pending and refund every payment: gift cards are
        credited at once, other methods within 5-7 business days. Only after explaining the
        details and getting the customer's explicit yes.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
            reason: Either 'no longer needed' or 'ordered by mistake'.
        """
        order = self._order(order_id)
        if order.status != "pending":
            raise ValueError("Non-pending order cannot be cancelled")
        if reason not in _CANCEL_REASONS:
            raise ValueError("Invalid reason")

        refunds = []
        for payment in order.payment_history:
            method_id = payment.payment_method_id
            refunds.append(
                OrderPayment(
                    transaction_type="refund", amount=payment.amount, payment_method_id=method_id
                )
            )
            owner = self._user(order.user_id)
            method = self._payment_method(owner.user_id, method_id)
            if isinstance(method, GiftCard):
                method.balance = _round_money(method.balance + payment.amount)

        order.status = "cancelled"
        order.cancel_reason = reason
        order.payment_history.extend(refunds)
        return order

    @tool(ToolKind.WRITE)
    def modify_pending_order_address(
        self,
        order_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> Order:
        """Change the shipping address of a pending order. Only after explaining the change and
        getting the customer's explicit yes.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
            address1: Street line, e.g. '12 Oak Avenue'.
            address2: Second line, e.g. 'Unit 4', or '' when there is none.
            city: City, e.g. 'Austin'.
            state: State code, e.g. 'TX'.
            country: Country, e.g. 'USA'.
            zip: Zip code, e.g. '73301'.
        """
        order = self._order(order_id)
        if "pending" not in order.status:
            raise ValueError("Non-pending order cannot be modified")
        order.address = UserAddress(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        )
        return order

    @tool(ToolKind.WRITE)
    def modify_pending_order_items(
        self,
        order_id: str,
        item_ids: list[str],
        new_item_ids: list[str],
        payment_method_id: str,
    ) -> Order:
        """Swap items of a pending order for other items (variants) of the same products, paying
        or refunding the price difference. Possible once per order: the order then becomes
        'pending (item modified)'. Only after explaining the change and getting the customer's
        explicit yes; collect every item to change before calling.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
            item_ids: Ids of the order's items to replace; repeat an id to replace several units.
            new_item_ids: Replacement item ids, position by position, each a different variant of the same product as the item it replaces.
            payment_method_id: The customer's payment method that pays or receives the price difference, e.g. 'gift_card_1234567' or 'credit_card_1234567'.
        """
        order = self._order(order_id)
        if order.status != "pending":
            raise ValueError("Non-pending order cannot be modified")

        missing = _has_enough_of_each(item_ids, [line.item_id for line in order.items])
        if missing is not None:
            raise ValueError(f"{missing} not found")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match")

        difference = 0
        variant = None
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            if item_id == new_item_id:
                raise ValueError("The new item id should be different from the old item id")
            line = _first_item_with_id(order, item_id)
            if line is None:
                raise ValueError(f"Item {item_id} not found")
            variant = self._variant_of(line.product_id, new_item_id)
            if not variant.available:
                raise ValueError(f"New item {new_item_id} not found or available")
            difference += variant.price - line.price

        method = self._payment_method(order.user_id, payment_method_id)
        if isinstance(method, GiftCard) and method.balance < difference:
            raise ValueError("Insufficient gift card balance to pay for the new item")

        order.payment_history.append(
            OrderPayment(
                transaction_type="payment" if difference > 0 else "refund",
                amount=abs(difference),
                payment_method_id=payment_method_id,
            )
        )
        if isinstance(method, GiftCard):
            method.balance = _round_money(method.balance - difference)

        # Like the reference, every replaced line takes the price and options of the LAST
        # variant looked up above, while its item id becomes its own replacement id.
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            line = _first_item_with_id(order, item_id)
            if line is None:
                raise ValueError(f"Item {item_id} not found")
            line.item_id = new_item_id
            line.price = variant.price
            line.options = dict(variant.options)
        order.status = "pending (item modified)"
        return order

    @tool(ToolKind.WRITE)
    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> Order:
        """Move the payment of a pending order to another of the customer's payment methods: the
        new method is charged and the old one refunded (gift cards immediately). Only after
        explaining the change and getting the customer's explicit yes.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
            payment_method_id: The new payment method, e.g. 'gift_card_1234567' or 'credit_card_1234567'.
        """
        order = self._order(order_id)
        if "pending" not in order.status:
            raise ValueError("Non-pending order cannot be modified")
        method = self._payment_method(order.user_id, payment_method_id)

        history = order.payment_history
        if len(history) != 1 or history[0].transaction_type != "payment":
            raise ValueError("There should be exactly one payment for a pending order")
        if history[0].payment_method_id == payment_method_id:
            raise ValueError("The new payment method should be different from the current one")
        amount = history[0].amount
        if isinstance(method, GiftCard) and method.balance < amount:
            raise ValueError("Insufficient gift card balance to pay for the order")

        old_method_id = history[0].payment_method_id
        history.extend(
            [
                OrderPayment(
                    transaction_type="payment", amount=amount, payment_method_id=payment_method_id
                ),
                OrderPayment(
                    transaction_type="refund", amount=amount, payment_method_id=old_method_id
                ),
            ]
        )
        if isinstance(method, GiftCard):
            method.balance = _round_money(method.balance - amount)
        old_method = self._payment_method(order.user_id, old_method_id)
        if isinstance(old_method, GiftCard):
            old_method.balance = _round_money(old_method.balance + amount)
        return order

    # --- customers -------------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def modify_user_address(
        self,
        user_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> User:
        """Change a customer's default address (existing orders keep theirs). Only after
        explaining the change and getting the customer's explicit yes.

        Args:
            user_id: The customer's user id, e.g. 'jane_doe_1234'.
            address1: Street line, e.g. '12 Oak Avenue'.
            address2: Second line, e.g. 'Unit 4', or '' when there is none.
            city: City, e.g. 'Austin'.
            state: State code, e.g. 'TX'.
            country: Country, e.g. 'USA'.
            zip: Zip code, e.g. '73301'.
        """
        user = self._user(user_id)
        user.address = UserAddress(
            address1=address1, address2=address2, city=city, state=state, country=country, zip=zip
        )
        return user

    # --- delivered orders ------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def return_delivered_order_items(
        self,
        order_id: str,
        item_ids: list[str],
        payment_method_id: str,
    ) -> Order:
        """Request the return of items of a delivered order; the order becomes 'return
        requested' and the customer gets return instructions by email. The refund goes to the
        original payment method or to a gift card. A delivered order can be returned or
        exchanged only once. Only after explaining the details and getting the customer's
        explicit yes.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
            item_ids: Ids of the order's items to return; repeat an id to return several units.
            payment_method_id: Where the refund goes: the order's original payment method or one of the customer's gift cards.
        """
        order = self._order(order_id)
        if order.status != "delivered":
            raise ValueError("Non-delivered order cannot be returned")
        owner = self._user(order.user_id)
        method = self._payment_method(owner.user_id, payment_method_id)
        if (
            not isinstance(method, GiftCard)
            and payment_method_id != order.payment_history[0].payment_method_id
        ):
            raise ValueError("Payment method should be the original payment method")
        if _has_enough_of_each(item_ids, [line.item_id for line in order.items]) is not None:
            raise ValueError("Some item not found")

        order.status = "return requested"
        order.return_items = sorted(item_ids)
        order.return_payment_method_id = payment_method_id
        return order

    @tool(ToolKind.WRITE)
    def exchange_delivered_order_items(
        self,
        order_id: str,
        item_ids: list[str],
        new_item_ids: list[str],
        payment_method_id: str,
    ) -> Order:
        """Request the exchange of items of a delivered order for other items (variants) of the
        same products; the order becomes 'exchange requested' and the price difference is
        recorded for the given payment method. A delivered order can be returned or exchanged
        only once, so collect every item first. Only after explaining the details and getting
        the customer's explicit yes.

        Args:
            order_id: The order id, which starts with '#', e.g. '#W1234567'.
            item_ids: Ids of the order's items to exchange; repeat an id to exchange several units.
            new_item_ids: Replacement item ids, position by position, each an available variant of the same product as the item it replaces.
            payment_method_id: The customer's payment method that pays or receives the price difference, e.g. 'gift_card_1234567' or 'credit_card_1234567'.
        """
        order = self._order(order_id)
        if order.status != "delivered":
            raise ValueError("Non-delivered order cannot be exchanged")

        missing = _has_enough_of_each(item_ids, [line.item_id for line in order.items])
        if missing is not None:
            raise ValueError(f"Number of {missing} not found.")
        if len(item_ids) != len(new_item_ids):
            raise ValueError("The number of items to be exchanged should match.")

        difference = 0
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            line = _first_item_with_id(order, item_id)
            if line is None:
                raise ValueError(f"Item {item_id} not found")
            variant = self._variant_of(line.product_id, new_item_id)
            if not variant.available:
                raise ValueError(f"New item {new_item_id} not found or available")
            difference += variant.price - line.price
        difference = _round_money(difference)

        method = self._payment_method(order.user_id, payment_method_id)
        if isinstance(method, GiftCard) and method.balance < difference:
            raise ValueError("Insufficient gift card balance to pay for the price difference")

        order.status = "exchange requested"
        order.exchange_items = sorted(item_ids)
        order.exchange_new_items = sorted(new_item_ids)
        order.exchange_payment_method_id = payment_method_id
        order.exchange_price_difference = difference
        return order
