"""Airline tool semantics that are easy to get subtly wrong (quirks kept from the reference).

Runs on a small hand-made database, so no reference data is needed, except for the signature
check, which skips without the conformance fixtures.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from tau_mcp.servers.domains.airline import SPEC
from tau_mcp.servers.domains.airline.agent_tools import AirlineTools
from tau_mcp.servers.domains.airline.models import FlightDB
from tau_mcp.servers.engine.cow import BaseState, CowDB
from tau_mcp.servers.engine.render import render_result
from tests.support import conformance as conf


def _day(seats: int, price: int) -> dict:
    return {
        "status": "available",
        "available_seats": {"business": seats, "economy": seats, "basic_economy": seats},
        "prices": {"business": price * 3, "economy": price, "basic_economy": price // 2},
    }


def _flight(number: str, origin: str, destination: str, dep: str, arr: str, dates: dict) -> dict:
    return {
        "flight_number": number,
        "origin": origin,
        "destination": destination,
        "scheduled_departure_time_est": dep,
        "scheduled_arrival_time_est": arr,
        "dates": dates,
    }


def _small_db() -> FlightDB:
    flights = [
        _flight("HAT001", "JFK", "ORD", "08:00:00", "10:00:00", {"2024-05-20": _day(5, 100)}),
        _flight("HAT002", "ORD", "JFK", "12:00:00", "14:00:00", {"2024-05-20": _day(5, 120)}),
        _flight(
            "HAT003",
            "SFO",
            "DEN",
            "22:00:00",
            "02:00:00+1",
            {"2024-05-05": _day(5, 200), "2024-05-09": _day(5, 200)},
        ),
        _flight(
            "HAT004",
            "DEN",
            "BOS",
            "06:00:00",
            "11:00:00",
            {"2024-05-06": _day(5, 90), "2024-05-10": _day(5, 90)},
        ),
    ]
    user = {
        "user_id": "ana_1",
        "name": {"first_name": "Ana", "last_name": "Ito"},
        "address": {
            "address1": "1 Main St",
            "city": "Austin",
            "country": "USA",
            "state": "TX",
            "zip": "78701",
        },
        "email": "ana@example.com",
        "dob": "1990-01-01",
        "payment_methods": {
            "credit_card_1": {
                "source": "credit_card",
                "id": "credit_card_1",
                "brand": "visa",
                "last_four": "1111",
            },
            "gift_card_1": {"source": "gift_card", "id": "gift_card_1", "amount": 500.0},
            "certificate_1": {"source": "certificate", "id": "certificate_1", "amount": 150.0},
        },
        "saved_passengers": [],
        "membership": "gold",
        "reservations": ["RES001"],
    }
    reservation = {
        "reservation_id": "RES001",
        "user_id": "ana_1",
        "origin": "JFK",
        "destination": "JFK",
        "flight_type": "round_trip",
        "cabin": "economy",
        "flights": [
            {
                "flight_number": "HAT001",
                "origin": "JFK",
                "destination": "ORD",
                "date": "2024-05-20",
                "price": 80,
            },
            {
                "flight_number": "HAT002",
                "origin": "ORD",
                "destination": "JFK",
                "date": "2024-05-20",
                "price": 90,
            },
        ],
        "passengers": [
            {"first_name": "Ana", "last_name": "Ito", "dob": "1990-01-01"},
            {"first_name": "Bo", "last_name": "Ito", "dob": "1991-01-01"},
        ],
        "payment_history": [{"payment_id": "credit_card_1", "amount": 340}],
        "created_at": "2024-05-01T10:00:00",
        "total_baggages": 1,
        "nonfree_baggages": 0,
        "insurance": "no",
    }
    return FlightDB.model_validate(
        {
            "flights": {f["flight_number"]: f for f in flights},
            "users": {"ana_1": user},
            "reservations": {"RES001": reservation},
        }
    )


@pytest.fixture(scope="module")
def base() -> BaseState:
    return BaseState(_small_db())


@pytest.fixture
def tools(base: BaseState) -> AirlineTools:
    return AirlineTools(CowDB(base))


PASSENGER = {"first_name": "Ana", "last_name": "Ito", "dob": "1990-01-01"}


def test_booking_charges_each_method_takes_seats_and_leaves_shared_base_alone(
    tools: AirlineTools, base: BaseState
) -> None:
    # 2 passengers x $100 economy + $60 insurance + 1 paid bag $50 = $310.
    booked = tools.book_reservation(
        user_id="ana_1",
        origin="JFK",
        destination="ORD",
        flight_type="one_way",
        cabin="economy",
        flights=[{"flight_number": "HAT001", "date": "2024-05-20"}],
        passengers=[PASSENGER, PASSENGER],
        payment_methods=[
            {"payment_id": "certificate_1", "amount": 100},
            {"payment_id": "gift_card_1", "amount": 210},
        ],
        total_baggages=2,
        nonfree_baggages=1,
        insurance="yes",
    )
    assert booked.reservation_id == "HATHAT"
    assert booked.created_at == "2024-05-15T15:00:00"
    assert [f.price for f in booked.flights] == [100]
    user = tools.db.users.peek("ana_1")
    assert "certificate_1" not in user.payment_methods  # used up although $50 was left on it
    assert user.payment_methods["gift_card_1"].amount == 290
    assert user.reservations == ["RES001", "HATHAT"]
    assert tools.db.flights.peek("HAT001").dates["2024-05-20"].available_seats["economy"] == 3
    # The shared base database is untouched.
    assert base.model.flights["HAT001"].dates["2024-05-20"].available_seats["economy"] == 5
    assert "certificate_1" in base.model.users["ana_1"].payment_methods


def test_booking_with_a_certificate_listed_twice_fails_after_spending_it(
    tools: AirlineTools,
) -> None:
    args = dict(
        user_id="ana_1",
        origin="JFK",
        destination="ORD",
        flight_type="one_way",
        cabin="economy",
        flights=[{"flight_number": "HAT001", "date": "2024-05-20"}],
        passengers=[PASSENGER],
        payment_methods=[
            {"payment_id": "certificate_1", "amount": 50},
            {"payment_id": "certificate_1", "amount": 50},
        ],
        total_baggages=0,
        nonfree_baggages=0,
        insurance="no",
    )
    with pytest.raises(KeyError) as failure:
        tools.book_reservation(**args)
    assert str(failure.value) == "'certificate_1'"
    # The certificate is gone, but no reservation and no seats were taken.
    assert "certificate_1" not in tools.db.users.peek("ana_1").payment_methods
    assert "HATHAT" not in tools.db.reservations
    assert tools.db.flights.peek("HAT001").dates["2024-05-20"].available_seats["economy"] == 5


def test_booking_reports_wrong_totals_and_bad_records_like_the_reference(
    tools: AirlineTools,
) -> None:
    with pytest.raises(ValueError, match="total price is 100, but paid 99"):
        tools.book_reservation(
            user_id="ana_1",
            origin="JFK",
            destination="ORD",
            flight_type="one_way",
            cabin="economy",
            flights=[{"flight_number": "HAT001", "date": "2024-05-20"}],
            passengers=[PASSENGER],
            payment_methods=[{"payment_id": "credit_card_1", "amount": 99}],
            total_baggages=0,
            nonfree_baggages=0,
            insurance="no",
        )
    with pytest.raises(ValidationError) as failure:
        tools.book_reservation(
            user_id="ana_1",
            origin="JFK",
            destination="ORD",
            flight_type="one_way",
            cabin="first",
            flights=[],
            passengers=["Ana"],
            payment_methods=[],
            total_baggages=0,
            nonfree_baggages=0,
            insurance="no",
        )
    assert str(failure.value).startswith("2 validation errors for Reservation\ncabin\n")


def test_flight_change_reprices_kept_segments_when_the_cabin_changes(tools: AirlineTools) -> None:
    same = [
        {"flight_number": "HAT001", "date": "2024-05-20"},
        {"flight_number": "HAT002", "date": "2024-05-20"},
    ]
    unchanged = tools.update_reservation_flights("RES001", "economy", same, "credit_card_1")
    assert [f.price for f in unchanged.flights] == [80, 90]
    assert len(unchanged.payment_history) == 1  # nothing to pay, no payment row

    # Basic economy today costs 50 + 60 per person, less than the 80 + 90 paid: a credit of
    # 2 x 60 = 120 goes back onto the gift card, above its former balance.
    cheaper = tools.update_reservation_flights("RES001", "basic_economy", same, "gift_card_1")
    assert [f.price for f in cheaper.flights] == [50, 60]
    assert cheaper.payment_history[-1].amount == -120
    assert tools.db.users.peek("ana_1").payment_methods["gift_card_1"].amount == 620
    # Seat counts are not touched by flight changes.
    assert tools.db.flights.peek("HAT001").dates["2024-05-20"].available_seats["basic_economy"] == 5


def test_flight_change_refuses_certificates_and_unknown_cabins(tools: AirlineTools) -> None:
    new = [{"flight_number": "HAT002", "date": "2024-05-20"}]
    with pytest.raises(ValueError, match="^Certificate cannot be used to update reservation$"):
        tools.update_reservation_flights("RES001", "business", new, "certificate_1")
    with pytest.raises(KeyError) as failure:
        tools.update_reservation_flights("RES001", "first", new, "credit_card_1")
    assert str(failure.value) == "'first'"


def test_baggage_update_debits_gift_card_before_the_payment_fails(tools: AirlineTools) -> None:
    # 0.33 extra bags cost $16.5: the card is debited, then the whole-dollar Payment rejects it.
    with pytest.raises(ValidationError, match="1 validation error for Payment"):
        tools.update_reservation_baggages("RES001", 1, 0.33, "gift_card_1")
    assert tools.db.users.peek("ana_1").payment_methods["gift_card_1"].amount == 483.5
    assert tools.db.reservations.peek("RES001").nonfree_baggages == 0


def test_onestop_search_builds_next_day_dates_without_zero_padding(tools: AirlineTools) -> None:
    later = tools.search_onestop_flight("SFO", "BOS", "2024-05-09")
    assert [[f.flight_number, f.date] for pair in later for f in pair] == [
        ["HAT003", "2024-05-09"],
        ["HAT004", "2024-05-10"],
    ]
    # From the 5th the connection date becomes "2024-05-6", which matches no flight date.
    assert tools.search_onestop_flight("SFO", "BOS", "2024-05-05") == []
    assert json.loads(render_result(later))[0][1]["prices"] == {
        "business": 270,
        "economy": 90,
        "basic_economy": 45,
    }


def test_passenger_update_keeps_the_count_but_not_the_types(tools: AirlineTools) -> None:
    with pytest.raises(ValueError, match="^Number of passengers does not match$"):
        tools.update_reservation_passengers("RES001", [PASSENGER])
    # Two non-dict items of the right count are stored as given, like the reference does.
    stored = tools.update_reservation_passengers("RES001", "ab")
    assert stored.passengers == "ab"


def test_certificates_get_fixed_ids_and_run_out_after_three(tools: AirlineTools) -> None:
    texts = [tools.send_certificate("ana_1", 100) for _ in range(3)]
    assert texts[0] == "Certificate certificate_3221322 added to user ana_1 with amount 100."
    assert texts[2].startswith("Certificate certificate_3221324 ")
    with pytest.raises(ValueError, match="^Too many certificates$"):
        tools.send_certificate("ana_1", 100)


def test_calculate_and_argument_errors_read_like_the_reference(tools: AirlineTools) -> None:
    assert tools.calculate("10 / 3") == "3.33"
    with pytest.raises(ValueError, match="^Invalid characters in expression$"):
        tools.calculate("2 ** x")
    with pytest.raises(TypeError) as failure:
        tools.get_user_details()  # type: ignore[call-arg]
    assert (
        str(failure.value)
        == "AirlineTools.get_user_details() missing 1 required positional argument: 'user_id'"
    )


@pytest.mark.needs_data("airline", "conformance")
def test_tool_signatures_match_the_reference() -> None:
    reference = json.loads((conf.CONFORMANCE_DIR / "tool_signatures.json").read_text())["airline"][
        "agent"
    ]
    specs = SPEC.agent_tools.specs
    assert sorted(specs) == sorted(reference)
    for name, want in reference.items():
        schema = specs[name].input_schema
        assert sorted(schema["properties"]) == want["params"], name
        assert sorted(schema["required"]) == want["required"], name
        assert {p: schema["properties"][p].get("type") for p in want["types"]} == want["types"], (
            name
        )
