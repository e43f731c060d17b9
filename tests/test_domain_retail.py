"""Retail semantics that are easy to get subtly wrong when rebuilding the reference's tools."""

from __future__ import annotations

import json

import pytest

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.episode import EpisodeStore
from tests.support import conformance as conf

RETAIL_DIR = conf.DATA_DIR / "tau2" / "domains" / "retail"

pytestmark = pytest.mark.needs_data("retail")

# A pending order with two lines of different products, paid with a gift card.
ORDER = "#W6779827"
GIFT_CARD = "gift_card_7219486"
USER = "ethan_lopez_6291"


@pytest.fixture(scope="module")
def store() -> EpisodeStore:
    return EpisodeStore(load_domains(["retail"], conf.DATA_DIR))


def call(episode, name: str, **arguments):
    outcome = episode.call("agent", name, arguments)
    return outcome.text, outcome.error


def gift_balance(episode) -> float:
    text, error = call(episode, "get_user_details", user_id=USER)
    assert not error
    return json.loads(text)["payment_methods"][GIFT_CARD]["balance"]


def test_modified_lines_take_the_last_variants_price_and_options(store):
    episode = store.create("retail")
    before = gift_balance(episode)
    text, error = call(
        episode,
        "modify_pending_order_items",
        order_id=ORDER,
        item_ids=["7896397433", "3379843752"],
        new_item_ids=["2444431651", "3709608322"],
        payment_method_id=GIFT_CARD,
    )
    assert not error, text
    order = json.loads(text)
    last_variant = json.loads(call(episode, "get_item_details", item_id="3709608322")[0])
    first, second = order["items"][0], order["items"][1]
    # Each line gets its own new id, but both carry the last looked-up variant's price/options.
    assert (first["item_id"], second["item_id"]) == ("2444431651", "3709608322")
    assert first["price"] == second["price"] == last_variant["price"] == 2744.7
    assert first["options"] == last_variant["options"]
    # The difference is computed from the true prices: a refund to the gift card.
    difference = (534.84 - 457.81) + (2744.7 - 3203.76)
    assert order["payment_history"][-1]["transaction_type"] == "refund"
    assert order["payment_history"][-1]["amount"] == abs(difference)
    assert gift_balance(episode) == round(before - difference, 2)
    assert order["status"] == "pending (item modified)"


def test_episodes_do_not_see_each_others_writes(store):
    changed = store.create("retail")
    untouched = store.create("retail")
    base_hash = untouched.hashes()["agent_db"]
    assert not call(changed, "cancel_pending_order", order_id=ORDER, reason="no longer needed")[1]
    assert changed.hashes()["agent_db"] != base_hash
    assert (
        json.loads(call(untouched, "get_order_details", order_id=ORDER)[0])["status"] == "pending"
    )
    assert untouched.hashes()["agent_db"] == base_hash
    assert store.create("retail").hashes()["agent_db"] == base_hash


def test_string_item_ids_are_checked_character_by_character(store):
    episode = store.create("retail")
    text, error = call(
        episode,
        "modify_pending_order_items",
        order_id=ORDER,
        item_ids="Q7",
        new_item_ids=["1"],
        payment_method_id=GIFT_CARD,
    )
    assert (text, error) == ("Error: Q not found", True)


def test_name_lookup_only_touches_last_name_after_a_first_name_match(store):
    episode = store.create("retail")
    assert call(episode, "find_user_id_by_name_zip", first_name=7, last_name="x", zip="1") == (
        "Error: 'int' object has no attribute 'lower'",
        True,
    )
    # No customer is called "Nobodyxyz", so the bad last name is never looked at.
    assert call(
        episode, "find_user_id_by_name_zip", first_name="Nobodyxyz", last_name=7, zip="1"
    ) == (
        "Error: User not found",
        True,
    )


def test_cancel_checks_status_before_reason_and_hashes_reasons(store):
    episode = store.create("retail")
    assert call(episode, "cancel_pending_order", order_id=ORDER, reason=["x"]) == (
        "Error: unhashable type: 'list'",
        True,
    )
    assert call(episode, "cancel_pending_order", order_id=ORDER, reason="too expensive") == (
        "Error: Invalid reason",
        True,
    )


def test_failed_exchange_leaves_no_trace(store):
    episode = store.create("retail")
    base_hash = episode.hashes()["agent_db"]
    text, error = call(
        episode,
        "exchange_delivered_order_items",
        order_id=ORDER,
        item_ids=["7896397433"],
        new_item_ids=["2444431651"],
        payment_method_id=GIFT_CARD,
    )
    assert (text, error) == ("Error: Non-delivered order cannot be exchanged", True)
    assert episode.hashes()["agent_db"] == base_hash


def test_calculate_rounds_and_rejects_names(store):
    episode = store.create("retail")
    assert call(episode, "calculate", expression="(10 + 10) / 3") == ("6.67", False)
    assert call(episode, "calculate", expression="__import__('os')") == (
        "Error: Invalid characters in expression",
        True,
    )
