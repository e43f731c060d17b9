"""Telecom semantics that are easy to get subtly wrong: the phone/carrier sync, minted bills,
and bad arguments that the reference stores before it fails."""

from __future__ import annotations

import json
import re

import pytest

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.canonical import canonical_hash
from tau_mcp.servers.engine.episode import EpisodeStore
from tests.support import conformance as conf

TELECOM_DIR = conf.DATA_DIR / "tau2" / "domains" / "telecom"

pytestmark = pytest.mark.needs_data("telecom")

# John Smith (C1001) on line L1002, whose line is suspended for an unpaid bill B1234321.
OVERDUE_TASK = (
    "[service_issue]airplane_mode_on|break_apn_settings|overdue_bill_suspension[PERSONA:None]"
)


@pytest.fixture(scope="module")
def store() -> EpisodeStore:
    return EpisodeStore(load_domains(["telecom"], conf.DATA_DIR))


def agent(episode, name: str, **arguments):
    outcome = episode.call("agent", name, arguments)
    return outcome.text, outcome.error


def user(episode, name: str, **arguments):
    outcome = episode.call("user", name, arguments)
    return outcome.text, outcome.error


def test_base_split_and_policy_layout(store):
    domain = store.domain("telecom")
    assert len(domain.task_ids("base")) == 114
    main = (TELECOM_DIR / "main_policy.md").read_text()
    manual = (TELECOM_DIR / "tech_support_manual.md").read_text()
    assert domain.policy() == (
        f"<main_policy>\n{main}\n</main_policy>\n<tech_support_policy>\n{manual}\n</tech_support_policy>"
    )
    solo_main = (TELECOM_DIR / "main_policy_solo.md").read_text()
    assert domain.policy(solo=True).startswith(f"<main_policy>\n{solo_main}\n</main_policy>")


def test_paying_on_the_phone_settles_the_bill_at_the_carrier(store):
    episode = store.create("telecom", OVERDUE_TASK)
    assert user(episode, "check_payment_request") == ("No payment request has been made.", False)
    text, error = agent(episode, "send_payment_request", customer_id="C1001", bill_id="B1234321")
    assert not error, text
    # The sync turns the carrier's "Awaiting Payment" bill into a request on the phone.
    assert user(episode, "check_payment_request")[0] == (
        "You have a payment request for bill B1234321 of 65.0 USD."
    )
    assert (
        user(episode, "make_payment")[0] == "Payment of 65.0 USD has been made for bill B1234321."
    )
    bill = json.loads(agent(episode, "get_details_by_id", id="B1234321")[0])
    assert bill["status"] == "Paid"
    assert user(episode, "check_payment_request")[0] == "No payment request has been made."


def test_carrier_line_status_decides_the_phones_service(store):
    episode = store.create("telecom", OVERDUE_TASK)
    user(episode, "toggle_airplane_mode")
    user(episode, "reset_apn_settings")
    # The line is still suspended at the carrier: no service even with a working phone.
    assert "📵 No Signal" in user(episode, "reboot_device")[0]
    text, error = agent(episode, "resume_line", customer_id="C1001", line_id="L1002")
    assert not error, text
    assert "📶⁴ Excellent | 5G | 📱 Data Enabled" in user(episode, "reboot_device")[0]


def test_refuel_without_a_draft_bill_opens_one_with_a_reproducible_id(store):
    first, second = store.create("telecom"), store.create("telecom")
    for episode in (first, second):
        text, error = agent(
            episode, "refuel_data", customer_id="C1002", line_id="L1006", gb_amount=2
        )
        assert not error, text
        assert json.loads(text) == {
            "message": "Successfully added 2 GB of data for line L1006 for $0.20",
            "new_data_refueling_gb": "2.0",
            "charge": "0.2",
        }
    bills = [
        json.loads(agent(e, "get_bills_for_customer", customer_id="C1002")[0])[0]
        for e in (first, second)
    ]
    draft = bills[0]
    assert re.fullmatch(r"B[0-9a-f]{8}", draft["bill_id"])
    assert bills[1]["bill_id"] == draft["bill_id"]
    assert (draft["period_start"], draft["period_end"], draft["due_date"]) == (
        "2025-03-01",
        "2025-03-31",
        "2025-03-15",
    )
    assert draft["status"] == "Draft" and draft["total_due"] == 0.2
    assert draft["line_items"][0]["description"] == "Data refueling: 2 GB at $0.1/GB"
    # The state hash names the new bill by its position among new bills, not by its id.
    snapshot = json.loads(
        json.dumps(first.snapshot()["agent_db"]).replace(draft["bill_id"], "B_NEW_0")
    )
    assert first.hashes()["agent_db"] == canonical_hash(snapshot)


def test_a_non_dict_apn_setting_is_stored_before_the_call_fails(store):
    episode = store.create("telecom")
    assert user(episode, "set_apn_settings", apn_settings="junk") == (
        "Error: 'str' object has no attribute 'apn_name'",
        True,
    )
    assert episode.snapshot()["user_db"]["device"]["active_apn_settings"] == "junk"
    # Every later network search trips over the stored value, as in the reference.
    assert user(episode, "toggle_data") == ("Error: 'str' object has no attribute 'apn_name'", True)
    assert user(episode, "reset_apn_settings") == (
        "Error: 'str' object has no attribute 'reset_at_reboot'",
        True,
    )


def test_network_mode_names_are_checked_but_other_values_are_stored(store):
    episode = store.create("telecom")
    text, error = user(episode, "set_network_mode_preference", mode="5g")
    assert not error
    assert text.startswith("Failed to set network mode: '5g' is not a valid option.")
    assert (
        user(episode, "check_network_mode_preference")[0]
        == "Network Mode Preference: 4g_5g_preferred"
    )
    text, error = user(episode, "set_network_mode_preference", mode=None)
    assert not error and text.startswith("Failed to set network mode: 'None'")
    assert user(episode, "check_network_mode_preference") == (
        "Error: 'NoneType' object has no attribute 'value'",
        True,
    )


def test_vpn_connections_use_the_degraded_profile(store):
    episode = store.create("telecom")
    assert user(episode, "run_speed_test")[0].startswith(
        "Speed Test Result: 220.00 Mbps (Excellent)."
    )
    user(episode, "connect_vpn")
    assert user(episode, "run_speed_test")[0].startswith("Speed Test Result: 22.00 Mbps (Fair).")
    assert "<PerformanceLevel.POOR: 'poor'>" in user(episode, "check_vpn_status")[0]


def test_bad_arguments_fail_with_the_references_messages(store):
    episode = store.create("telecom")
    assert agent(episode, "get_customer_by_id") == (
        "Error: TelecomTools.get_customer_by_id() missing 1 required positional argument: 'customer_id'",
        True,
    )
    assert agent(episode, "get_bills_for_customer", customer_id="C1002", limit="3") == (
        "Error: slice indices must be integers or None or have an __index__ method",
        True,
    )
    assert user(episode, "check_app_status", app_name=[]) == (
        "Error: unhashable type: 'list'",
        True,
    )
