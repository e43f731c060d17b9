"""The original τ-bench retail tools, on the episode's copy-on-write data.

Each tool checks, reads and writes in the original's order with the same plain Python
operations on the caller's raw arguments, so its text, its errors (the ones it returns and the
ones Python raises for wrong types) and whatever it changed before failing are the original's.
Records a tool only reads are peeked at (shared, read-only); those it may change are indexed,
which gives the episode its own copy (see servers/engine/cow.py).
"""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.domains.tau_bench.records import dumps, lookup_text
from tau_mcp.servers.domains.tau_bench.toolkit import TRANSFERRED, OriginalTools, calculator
from tau_mcp.servers.domains.tau_bench_retail.models import Payment
from tau_mcp.servers.engine.toolkit import ToolKind, tool

CANCEL_REASONS = ["no longer needed", "ordered by mistake"]
_UNSET: Any = object()


def _payment(kind: Any, amount: Any, method: Any) -> Payment:
    """A payment-history entry as the tools write it (values unchecked, like the original's)."""
    return Payment.model_construct(transaction_type=kind, amount=amount, payment_method_id=method)


def _first_item(order: Any, item_id: Any) -> Any:
    """The order's first item with this id (IndexError when there is none, as in the original)."""
    return [item for item in order["items"] if item["item_id"] == item_id][0]


def _missing_item(order: Any, item_ids: Any) -> Any:
    """The first id asked for more often than the order holds it, else None. `count` runs on
    the caller's value itself: a string is checked character by character, as originally."""
    held = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > held.count(item_id):
            return item_id
    return None


def _price_difference(products: Any, order: Any, item_ids: Any, new_item_ids: Any) -> Any:
    """The new items' prices less the old ones', or the error text for a new item that is not
    an available variant of the old item's product."""
    difference = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
        item = _first_item(order, item_id)
        variants = products.peek(item["product_id"])["variants"]
        if not (new_item_id in variants and variants[new_item_id]["available"]):
            return f"Error: new item {new_item_id} not found or available"
        difference += variants[new_item_id]["price"] - item["price"]
    return difference


class RetailTools(OriginalTools):
    """An online store's customer-service tools (the original τ-bench retail domain)."""

    original_module = "tau_bench.envs.retail.tools"

    @tool(ToolKind.GENERIC)
    @staticmethod
    def calculate(data, expression):
        """Evaluate an arithmetic expression, rounded to 2 decimals."""
        return calculator(expression)

    @tool(ToolKind.WRITE)
    @staticmethod
    def cancel_pending_order(data, order_id, reason):
        """Cancel a pending order and refund its payments (gift cards at once)."""
        orders = data.orders
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "pending":
            return "Error: non-pending order cannot be cancelled"
        if reason not in CANCEL_REASONS:
            return "Error: invalid reason"
        refunds = []
        for payment in order["payment_history"]:
            method_id = payment["payment_method_id"]
            refunds.append(_payment("refund", payment["amount"], method_id))
            if "gift_card" in method_id:
                method = data.users[order["user_id"]]["payment_methods"][method_id]
                method["balance"] += payment["amount"]
                method["balance"] = round(method["balance"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return dumps(order)

    @tool(ToolKind.WRITE)
    @staticmethod
    def exchange_delivered_order_items(data, order_id, item_ids, new_item_ids, payment_method_id):
        """Ask to exchange delivered items for other variants of the same products."""
        products, orders, users = data.products, data.orders, data.users
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "delivered":
            return "Error: non-delivered order cannot be exchanged"
        missing = _missing_item(order, item_ids)
        if missing is not None:
            return f"Error: {missing} not found"
        if len(item_ids) != len(new_item_ids):
            return "Error: the number of items to be exchanged should match"
        difference = _price_difference(products, order, item_ids, new_item_ids)
        if isinstance(difference, str):
            return difference
        difference = round(difference, 2)
        methods = users.peek(order["user_id"])["payment_methods"]
        if payment_method_id not in methods:
            return "Error: payment method not found"
        method = methods[payment_method_id]
        if method["source"] == "gift_card" and method["balance"] < difference:
            return "Error: insufficient gift card balance to pay for the price difference"
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = difference
        return dumps(order)

    @tool(ToolKind.READ)
    @staticmethod
    def find_user_id_by_email(data, email):
        """The user id of the customer with this email (case-insensitive)."""
        wanted = _UNSET  # `email.lower()`, first computed where the original first computes it
        for user_id, profile in data.users.items():
            mine = profile.email.lower()
            if wanted is _UNSET:
                wanted = email.lower()
            if mine == wanted:
                return user_id
        return "Error: user not found"

    @tool(ToolKind.READ)
    @staticmethod
    def find_user_id_by_name_zip(data, first_name, last_name, zip):
        """The user id of the customer with this name (case-insensitive) and zip code."""
        # The arguments' lowercase forms, each first computed where the original first
        # computes it (a wrong type fails at the same user, or never).
        first = last = _UNSET
        for user_id, profile in data.users.items():
            mine = profile.name["first_name"].lower()
            if first is _UNSET:
                first = first_name.lower()
            if not mine == first:
                continue
            mine = profile.name["last_name"].lower()
            if last is _UNSET:
                last = last_name.lower()
            if mine == last and profile.address["zip"] == zip:
                return user_id
        return "Error: user not found"

    @tool(ToolKind.READ)
    @staticmethod
    def get_order_details(data, order_id):
        """An order's record."""
        return lookup_text(data, "orders", order_id, "Error: order not found")

    @tool(ToolKind.READ)
    @staticmethod
    def get_product_details(data, product_id):
        """A product's record with all its variants."""
        return lookup_text(data, "products", product_id, "Error: product not found")

    @tool(ToolKind.READ)
    @staticmethod
    def get_user_details(data, user_id):
        """A customer's record."""
        return lookup_text(data, "users", user_id, "Error: user not found")

    @tool(ToolKind.READ)
    @staticmethod
    def list_all_product_types(data):
        """Product names and ids, sorted by name."""
        names = {product["name"]: product["product_id"] for product in data.products.values()}
        return dumps(dict(sorted(names.items())))

    @tool(ToolKind.WRITE)
    @staticmethod
    def modify_pending_order_address(data, order_id, address1, address2, city, state, country, zip):
        """Change the shipping address of a pending order."""
        orders = data.orders
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "pending":
            return "Error: non-pending order cannot be modified"
        order["address"] = {
            "address1": address1,
            "address2": address2,
            "city": city,
            "state": state,
            "country": country,
            "zip": zip,
        }
        return dumps(order)

    @tool(ToolKind.WRITE)
    @staticmethod
    def modify_pending_order_items(data, order_id, item_ids, new_item_ids, payment_method_id):
        """Swap items of a pending order for other variants, paying or refunding the difference."""
        products, orders, users = data.products, data.orders, data.users
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "pending":
            return "Error: non-pending order cannot be modified"
        missing = _missing_item(order, item_ids)
        if missing is not None:
            return f"Error: {missing} not found"
        if len(item_ids) != len(new_item_ids):
            return "Error: the number of items to be exchanged should match"
        difference = _price_difference(products, order, item_ids, new_item_ids)
        if isinstance(difference, str):
            return difference
        if payment_method_id not in users.peek(order["user_id"])["payment_methods"]:
            return "Error: payment method not found"
        method = users[order["user_id"]]["payment_methods"][payment_method_id]
        if method["source"] == "gift_card" and method["balance"] < difference:
            return "Error: insufficient gift card balance to pay for the new item"
        kind = "payment" if difference > 0 else "refund"
        order["payment_history"].append(_payment(kind, abs(difference), payment_method_id))
        if method["source"] == "gift_card":
            method["balance"] -= difference
            method["balance"] = round(method["balance"], 2)
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            # In this order: with repeated ids, a lookup may fail after the id changed.
            item = _first_item(order, item_id)
            item["item_id"] = new_item_id
            item["price"] = products.peek(item["product_id"])["variants"][new_item_id]["price"]
            options = products.peek(item["product_id"])["variants"][new_item_id]["options"]
            item["options"] = dict(options)
        order["status"] = "pending (item modified)"
        return dumps(order)

    @tool(ToolKind.WRITE)
    @staticmethod
    def modify_pending_order_payment(data, order_id, payment_method_id):
        """Pay a pending order with another of the customer's payment methods."""
        orders = data.orders
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "pending":
            return "Error: non-pending order cannot be modified"
        if payment_method_id not in data.users.peek(order["user_id"])["payment_methods"]:
            return "Error: payment method not found"
        history = order["payment_history"]
        if len(history) > 1 or history[0]["transaction_type"] != "payment":
            return "Error: there should be exactly one payment for a pending order"
        if history[0]["payment_method_id"] == payment_method_id:
            return "Error: the new payment method should be different from the current one"
        amount = history[0]["amount"]
        methods = data.users[order["user_id"]]["payment_methods"]
        method = methods[payment_method_id]
        if method["source"] == "gift_card" and method["balance"] < amount:
            return "Error: insufficient gift card balance to pay for the order"
        old_method_id = history[0]["payment_method_id"]
        history.extend(
            [
                _payment("payment", amount, payment_method_id),
                _payment("refund", amount, old_method_id),
            ]
        )
        if method["source"] == "gift_card":
            method["balance"] -= amount
            method["balance"] = round(method["balance"], 2)
        if "gift_card" in history[0]["payment_method_id"]:
            old_method = methods[history[0]["payment_method_id"]]
            old_method["balance"] += amount
            old_method["balance"] = round(old_method["balance"], 2)
        return dumps(order)

    @tool(ToolKind.WRITE)
    @staticmethod
    def modify_user_address(data, user_id, address1, address2, city, state, country, zip):
        """Change a customer's default address."""
        users = data.users
        if user_id not in users:
            return "Error: user not found"
        user = users[user_id]
        user["address"] = {
            "address1": address1,
            "address2": address2,
            "city": city,
            "state": state,
            "country": country,
            "zip": zip,
        }
        return dumps(user)

    @tool(ToolKind.WRITE)
    @staticmethod
    def return_delivered_order_items(data, order_id, item_ids, payment_method_id):
        """Ask to return delivered items, refunding the original payment method or a gift card."""
        orders = data.orders
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "delivered":
            return "Error: non-delivered order cannot be returned"
        if payment_method_id not in data.users.peek(order["user_id"])["payment_methods"]:
            return "Error: payment method not found"
        if (
            "gift_card" not in payment_method_id
            and payment_method_id != order["payment_history"][0]["payment_method_id"]
        ):
            return (
                "Error: payment method should be either the original payment method or a gift card"
            )
        if _missing_item(order, item_ids) is not None:
            return "Error: some item not found"
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return dumps(order)

    @tool(ToolKind.THINK)
    @staticmethod
    def think(data, thought):
        """Note a thought; changes nothing."""
        return ""

    @tool(ToolKind.GENERIC)
    @staticmethod
    def transfer_to_human_agents(data, summary):
        """Hand the customer to a human agent; ends the episode."""
        return TRANSFERRED
