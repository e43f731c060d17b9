"""The original τ-bench airline tools, on the episode's copy-on-write data.

As in retail (see its tools.py): the original's checks, reads and writes in its order, on the
caller's raw arguments. What a caller passes for a booking's flights, passengers and payments
is stored as the caller's JSON (copied, so the stored data never shares objects with the
call's arguments). Flights are never changed by any tool, so searches read the shared records.
"""

from __future__ import annotations

import copy
from typing import Any

from tau_mcp.servers.domains.airline.airports import SERVED_AIRPORTS
from tau_mcp.servers.domains.tau_bench.records import dumps, fields_of, lookup_text
from tau_mcp.servers.domains.tau_bench.toolkit import TRANSFERRED, OriginalTools, calculator
from tau_mcp.servers.domains.tau_bench_airline.models import (
    Certificate,
    PaymentRecord,
    Reservation,
)
from tau_mcp.servers.engine.toolkit import ToolKind, tool

# A booking takes the first of these ids that is free ("each task makes at most 3 reservations").
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
# Certificates sent to a user take the first of these ids the user does not hold.
NEW_CERTIFICATE_NUMBERS = (3221322, 3221323, 3221324)
CREATED_AT = "2024-05-15T15:00:00"
INSURANCE_PER_PASSENGER = 30
PRICE_PER_NONFREE_BAG = 50


def _payment(payment_id: Any, amount: Any) -> PaymentRecord:
    """A payment-history entry as the tools write it (values unchecked)."""
    return PaymentRecord.model_construct(payment_id=payment_id, amount=amount)


def _price_flight(data: Any, flight: Any, cabin: Any, passengers: Any) -> str | None:
    """Check a flight the caller asked for and write its price, origin and destination into
    it; the error text when it cannot be booked for these passengers (counted only at the
    seat check, where the original counts them)."""
    flight_number = flight["flight_number"]
    if flight_number not in data.flights:
        return f"Error: flight {flight_number} not found"
    flight_data = data.flights.peek(flight_number)
    if flight["date"] not in flight_data["dates"]:
        return f"Error: flight {flight_number} not found on date {flight['date']}"
    date = flight_data["dates"][flight["date"]]
    if date["status"] != "available":
        return f"Error: flight {flight_number} not available on date {flight['date']}"
    if date["available_seats"][cabin] < len(passengers):
        return f"Error: not enough seats on flight {flight_number}"
    flight["price"] = date["prices"][cabin]
    flight["origin"] = flight_data["origin"]
    flight["destination"] = flight_data["destination"]
    return None


def _flight_on(flight: Any, date: Any) -> dict[str, Any]:
    """A search result: the flight's fields but its dates, then that date's."""
    result = {key: value for key, value in fields_of(flight).items() if key != "dates"}
    result.update(fields_of(flight["dates"][date]))
    return result


def _payment_error(method: Any, total_price: Any) -> str | None:
    """Why a payment method cannot pay for a change of a reservation, or None."""
    if method["source"] == "certificate":
        return "Error: certificate cannot be used to update reservation"
    if method["source"] == "gift_card" and method["amount"] < total_price:
        return "Error: gift card balance is not enough"
    return None


class AirlineTools(OriginalTools):
    """An airline's customer-service tools (the original τ-bench airline domain)."""

    original_module = "tau_bench.envs.airline.tools"

    @tool(ToolKind.WRITE)
    @staticmethod
    def book_reservation(
        data,
        user_id,
        origin,
        destination,
        flight_type,
        cabin,
        flights,
        passengers,
        payment_methods,
        total_baggages,
        nonfree_baggages,
        insurance,
    ):
        """Book a reservation for a user, paying with their payment methods."""
        reservations, users = data.reservations, data.users
        if user_id not in users:
            return "Error: user not found"
        user = users[user_id]
        reservation_id = NEW_RESERVATION_IDS[0]
        if reservation_id in reservations:
            reservation_id = NEW_RESERVATION_IDS[1]
            if reservation_id in reservations:
                reservation_id = NEW_RESERVATION_IDS[2]
        reservation = {
            "reservation_id": reservation_id,
            "user_id": user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": flight_type,
            "cabin": cabin,
            "flights": copy.deepcopy(flights),
            "passengers": passengers,
            "payment_history": payment_methods,
            "created_at": CREATED_AT,
            "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages,
            "insurance": insurance,
        }
        total_price = 0
        for flight in reservation["flights"]:
            error = _price_flight(data, flight, cabin, passengers)
            if error is not None:
                return error
            total_price += flight["price"] * len(passengers)
        if insurance == "yes":
            total_price += INSURANCE_PER_PASSENGER * len(passengers)
        total_price += PRICE_PER_NONFREE_BAG * nonfree_baggages
        methods = user["payment_methods"]
        for payment in payment_methods:
            payment_id = payment["payment_id"]
            amount = payment["amount"]
            if payment_id not in methods:
                return f"Error: payment method {payment_id} not found"
            if methods[payment_id]["source"] in ["gift_card", "certificate"]:
                if methods[payment_id]["amount"] < amount:
                    return f"Error: not enough balance in payment method {payment_id}"
        if sum(payment["amount"] for payment in payment_methods) != total_price:
            paid = sum(payment["amount"] for payment in payment_methods)
            return (
                f"Error: payment amount does not add up, total price is {total_price}, "
                f"but paid {paid}"
            )
        for payment in payment_methods:
            payment_id = payment["payment_id"]
            amount = payment["amount"]
            if methods[payment_id]["source"] == "gift_card":
                methods[payment_id]["amount"] -= amount
            elif methods[payment_id]["source"] == "certificate":
                del methods[payment_id]
        # Stored as the caller's JSON, copied off the call's own arguments.
        reservation["passengers"] = copy.deepcopy(passengers)
        reservation["payment_history"] = copy.deepcopy(payment_methods)
        reservations[reservation_id] = Reservation.model_construct(**reservation)
        user["reservations"].append(reservation_id)
        return dumps(reservation)

    @tool(ToolKind.GENERIC)
    @staticmethod
    def calculate(data, expression):
        """Evaluate an arithmetic expression, rounded to 2 decimals."""
        return calculator(expression)

    @tool(ToolKind.WRITE)
    @staticmethod
    def cancel_reservation(data, reservation_id):
        """Cancel a reservation, refunding every payment."""
        reservations = data.reservations
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        refunds = []
        for payment in reservation["payment_history"]:
            refunds.append(_payment(payment["payment_id"], -payment["amount"]))
        reservation["payment_history"].extend(refunds)
        reservation["status"] = "cancelled"
        return dumps(reservation)

    @tool(ToolKind.READ)
    @staticmethod
    def get_reservation_details(data, reservation_id):
        """A reservation's record."""
        missing = "Error: user not found"  # sic: the original's text
        return lookup_text(data, "reservations", reservation_id, missing)

    @tool(ToolKind.READ)
    @staticmethod
    def get_user_details(data, user_id):
        """A user's record."""
        return lookup_text(data, "users", user_id, "Error: user not found")

    @tool(ToolKind.READ)
    @staticmethod
    def list_all_airports(data):
        """Airport codes and their cities."""
        return dumps(dict(SERVED_AIRPORTS))

    @tool(ToolKind.READ)
    @staticmethod
    def search_direct_flight(data, origin, destination, date):
        """Direct flights between two airports that can be booked on a date."""
        results = []
        for flight in data.flights.values():
            if flight.origin == origin and flight.destination == destination:
                if date in flight.dates and flight.dates[date]["status"] == "available":
                    results.append(_flight_on(flight, date))
        return dumps(results)

    @tool(ToolKind.READ)
    @staticmethod
    def search_onestop_flight(data, origin, destination, date):
        """Two-flight connections between two airports leaving on a date."""
        flights = data.flights.values()
        results = []
        for first in flights:
            if not first.origin == origin:
                continue
            for second in flights:
                if not (second.destination == destination and first.destination == second.origin):
                    continue
                # Arriving the next day ("+1") connects to a flight of the next day.
                if "+1" in first.scheduled_arrival_time_est:
                    second_date = f"2024-05-{int(date[-2:]) + 1}"
                else:
                    second_date = date
                if first.scheduled_arrival_time_est > second.scheduled_departure_time_est:
                    continue
                if date in first.dates and second_date in second.dates:
                    if (
                        first.dates[date]["status"] == "available"
                        and second.dates[second_date]["status"] == "available"
                    ):
                        leg1 = _flight_on(first, date)
                        leg1["date"] = date
                        # sic: the original reads the second flight's data on the first date.
                        leg2 = _flight_on(second, date)
                        leg2["date"] = second_date
                        results.append([leg1, leg2])
        return dumps(results)

    @tool(ToolKind.WRITE)
    @staticmethod
    def send_certificate(data, user_id, amount):
        """Give a user a certificate of this amount."""
        users = data.users
        if user_id not in users:
            return "Error: user not found"
        user = users[user_id]
        for number in NEW_CERTIFICATE_NUMBERS:
            payment_id = f"certificate_{number}"
            if payment_id not in user["payment_methods"]:
                user["payment_methods"][payment_id] = Certificate.model_construct(
                    source="certificate", amount=amount, id=payment_id
                )
                return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
        # The original returns nothing here, which crashes its episode.
        return f"Error: user {user_id} cannot receive more certificates"

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

    @tool(ToolKind.WRITE)
    @staticmethod
    def update_reservation_baggages(
        data, reservation_id, total_baggages, nonfree_baggages, payment_id
    ):
        """Change a reservation's bags, paying for extra non-free ones."""
        users, reservations = data.users, data.reservations
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        total_price = PRICE_PER_NONFREE_BAG * max(
            0, nonfree_baggages - reservation["nonfree_baggages"]
        )
        if payment_id not in users.peek(reservation["user_id"])["payment_methods"]:
            return "Error: payment method not found"
        method = users[reservation["user_id"]]["payment_methods"][payment_id]
        error = _payment_error(method, total_price)
        if error is not None:
            return error
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        if method["source"] == "gift_card":
            method["amount"] -= total_price
        if total_price != 0:
            reservation["payment_history"].append(_payment(payment_id, total_price))
        return dumps(reservation)

    @tool(ToolKind.WRITE)
    @staticmethod
    def update_reservation_flights(data, reservation_id, cabin, flights, payment_id):
        """Change a reservation's flights or cabin, paying or refunding the difference."""
        users, reservations = data.users, data.reservations
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        total_price = 0
        flights = copy.deepcopy(flights)
        for flight in flights:
            # A flight the reservation already has, in the same cabin, keeps its price.
            kept = [
                old
                for old in reservation["flights"]
                if old["flight_number"] == flight["flight_number"]
                and old["date"] == flight["date"]
                and cabin == reservation["cabin"]
            ]
            if kept:
                total_price += kept[0]["price"] * len(reservation["passengers"])
                flight["price"] = kept[0]["price"]
                flight["origin"] = kept[0]["origin"]
                flight["destination"] = kept[0]["destination"]
                continue
            error = _price_flight(data, flight, cabin, reservation["passengers"])
            if error is not None:
                return error
            total_price += flight["price"] * len(reservation["passengers"])
        total_price -= sum(old["price"] for old in reservation["flights"]) * len(
            reservation["passengers"]
        )
        if payment_id not in users.peek(reservation["user_id"])["payment_methods"]:
            return "Error: payment method not found"
        method = users[reservation["user_id"]]["payment_methods"][payment_id]
        error = _payment_error(method, total_price)
        if error is not None:
            return error
        if method["source"] == "gift_card":
            method["amount"] -= total_price
        reservation["flights"] = flights
        if total_price != 0:
            reservation["payment_history"].append(_payment(payment_id, total_price))
        return dumps(reservation)

    @tool(ToolKind.WRITE)
    @staticmethod
    def update_reservation_passengers(data, reservation_id, passengers):
        """Replace a reservation's passengers (the same number of them)."""
        reservations = data.reservations
        if reservation_id not in reservations:
            return "Error: reservation not found"
        reservation = reservations[reservation_id]
        if len(passengers) != len(reservation["passengers"]):
            return "Error: number of passengers does not match"
        reservation["passengers"] = copy.deepcopy(passengers)
        return dumps(reservation)
