"""Agent-side tools of the airline domain.

Tools receive the caller's raw arguments, so the order of lookups and checks below is part of
the behaviour: a bad argument must fail with the same message, at the same point, leaving the
same partial changes as the reference.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from tau_mcp.servers.domains.airline.airports import airport_codes
from tau_mcp.servers.domains.airline.models import (
    AirportCode,
    CabinClass,
    Certificate,
    DirectFlight,
    Flight,
    FlightDateStatus,
    FlightDateStatusAvailable,
    FlightInfo,
    FlightType,
    Insurance,
    Passenger,
    Payment,
    Reservation,
    ReservationFlight,
    User,
)
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, tool

# Ids handed out to new records: the benchmark assumes at most three of each per task.
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = tuple(f"certificate_{n}" for n in (3221322, 3221323, 3221324))
# The benchmark's fixed "now".
CURRENT_TIME = "2024-05-15T15:00:00"
INSURANCE_FEE = 30  # per passenger
CHECKED_BAG_FEE = 50  # per non-free bag
ARITHMETIC_CHARS = "0123456789+-*/(). "


def _records_from_dicts(items: Any, model: type) -> Any:
    """Build `model` records when every item is a dict; otherwise hand the items on untouched
    (later validation or attribute access then reports the problem)."""
    if all(isinstance(item, dict) for item in items):
        return [model(**item) for item in items]
    return items


class AirlineTools(Toolkit):
    """Flights, users and reservations of the airline."""

    # --- lookups (raise the reference's "not found" messages) -------------------------------
    def _get_user(self, user_id: str, *, writable: bool = True) -> User:
        if user_id not in self.db.users:
            raise ValueError(f"User {user_id} not found")
        return self.db.users[user_id] if writable else self.db.users.peek(user_id)

    def _get_reservation(self, reservation_id: str, *, writable: bool = True) -> Reservation:
        if reservation_id not in self.db.reservations:
            raise ValueError(f"Reservation {reservation_id} not found")
        table = self.db.reservations
        return table[reservation_id] if writable else table.peek(reservation_id)

    def _get_flight(self, flight_number: str, *, writable: bool = True) -> Flight:
        if flight_number not in self.db.flights:
            raise ValueError(f"Flight {flight_number} not found")
        return self.db.flights[flight_number] if writable else self.db.flights.peek(flight_number)

    def _get_flight_instance(
        self, flight_number: str, date: str, *, writable: bool = True
    ) -> FlightDateStatus:
        flight = self._get_flight(flight_number, writable=writable)
        if date not in flight.dates:
            raise ValueError(f"Flight {flight_number} not found on date {date}")
        return flight.dates[date]

    def _new_reservation_id(self) -> str:
        for candidate in NEW_RESERVATION_IDS:
            if candidate not in self.db.reservations:
                return candidate
        raise ValueError("Too many reservations")

    def _available_flights(
        self,
        date: str,
        origin: str | None = None,
        destination: str | None = None,
        leave_after: str | None = None,
    ) -> list[DirectFlight]:
        """Bookable flights on `date`; None filters match anything. Reads shared records only."""
        found = []
        for flight in self.db.flights.values():
            if origin is not None and flight.origin != origin:
                continue
            if destination is not None and flight.destination != destination:
                continue
            if date not in flight.dates:
                continue
            day = flight.dates[date]
            if day.status != "available":
                continue
            if leave_after is not None and not flight.scheduled_departure_time_est >= leave_after:
                continue
            # Validation builds new seat/price dicts, so results never alias the shared record.
            found.append(
                DirectFlight(
                    flight_number=flight.flight_number,
                    origin=flight.origin,
                    destination=flight.destination,
                    status="available",
                    scheduled_departure_time_est=flight.scheduled_departure_time_est,
                    scheduled_arrival_time_est=flight.scheduled_arrival_time_est,
                    available_seats=day.available_seats,
                    prices=day.prices,
                )
            )
        return found

    def _charge_for_change(self, user: User, payment_id: str, amount: int) -> Payment | None:
        """Charge a change to a saved credit card or gift card (certificates are refused).
        The gift card is debited before the payment record is built, as in the reference."""
        if payment_id not in user.payment_methods:
            raise ValueError("Payment method not found")
        method = user.payment_methods[payment_id]
        if method.source == "certificate":
            raise ValueError("Certificate cannot be used to update reservation")
        if method.source == "gift_card" and method.amount < amount:
            raise ValueError("Gift card balance is not enough")
        if method.source == "gift_card":
            method.amount -= amount
        if amount == 0:
            return None
        return Payment(payment_id=payment_id, amount=amount)

    # --- tools ------------------------------------------------------------------------------
    @tool(ToolKind.WRITE)
    def book_reservation(
        self,
        user_id: str,
        origin: str,
        destination: str,
        flight_type: FlightType,
        cabin: CabinClass,
        flights: list[FlightInfo | dict],
        passengers: list[Passenger | dict],
        payment_methods: list[Payment | dict],
        total_baggages: int,
        nonfree_baggages: int,
        insurance: Insurance,
    ) -> Reservation:
        """Book a new reservation for a user and charge it to the user's saved payment methods.

        The price is each flight's current price in the chosen cabin times the number of
        passengers, plus $30 per passenger with insurance, plus $50 per non-free bag. The
        amounts in `payment_methods` must add up to exactly that total; gift cards and
        certificates need enough balance, and a certificate is used up once charged. Every
        flight must be available with enough seats in the cabin.

        Args:
            user_id: Id of the user making the booking, e.g. 'sara_doe_496'.
            origin: IATA code of the trip's origin, e.g. 'SFO'.
            destination: IATA code of the trip's destination, e.g. 'JFK'.
            flight_type: 'one_way' or 'round_trip'.
            cabin: 'basic_economy', 'economy' or 'business' (same cabin for every flight).
            flights: Every flight segment to book, each {"flight_number", "date"}.
            passengers: Every traveller, each {"first_name", "last_name", "dob"}.
            payment_methods: How the total is paid, each {"payment_id", "amount"}; payment_id
                is the id of a payment method saved in the user's profile.
            total_baggages: Total number of checked bags.
            nonfree_baggages: How many of those bags are charged.
            insurance: 'yes' or 'no' for travel insurance.
        """
        flights = _records_from_dicts(flights, FlightInfo)
        passengers = _records_from_dicts(passengers, Passenger)
        payment_methods = _records_from_dicts(payment_methods, Payment)
        user = self._get_user(user_id)
        reservation_id = self._new_reservation_id()
        reservation = Reservation(
            reservation_id=reservation_id,
            user_id=user_id,
            origin=origin,
            destination=destination,
            flight_type=flight_type,
            cabin=cabin,
            flights=[],
            passengers=deepcopy(passengers),
            payment_history=deepcopy(payment_methods),
            created_at=CURRENT_TIME,
            total_baggages=total_baggages,
            nonfree_baggages=nonfree_baggages,
            insurance=insurance,
        )

        headcount = len(passengers)
        total_price = 0
        booked_days: list[FlightDateStatusAvailable] = []
        for segment in flights:
            number = segment.flight_number
            flight = self._get_flight(number)
            day = self._get_flight_instance(number, segment.date)
            if not isinstance(day, FlightDateStatusAvailable):
                raise ValueError(f"Flight {number} not available on date {segment.date}")
            if day.available_seats[cabin] < headcount:
                raise ValueError(f"Not enough seats on flight {number}")
            price = day.prices[cabin]
            reservation.flights.append(
                ReservationFlight(
                    origin=flight.origin,
                    destination=flight.destination,
                    flight_number=number,
                    date=segment.date,
                    price=price,
                )
            )
            booked_days.append(day)
            total_price += price * headcount
        if insurance == "yes":
            total_price += INSURANCE_FEE * headcount
        total_price += CHECKED_BAG_FEE * nonfree_baggages

        for payment in payment_methods:
            if payment.payment_id not in user.payment_methods:
                raise ValueError(f"Payment method {payment.payment_id} not found")
            method = user.payment_methods[payment.payment_id]
            if method.source in ("gift_card", "certificate") and method.amount < payment.amount:
                raise ValueError(f"Not enough balance in payment method {payment.payment_id}")
        paid = sum(payment.amount for payment in payment_methods)
        if paid != total_price:
            raise ValueError(
                f"Payment amount does not add up, total price is {total_price}, but paid {paid}"
            )

        # All checks passed: take the money, then the seats.
        for payment in payment_methods:
            # A certificate listed twice is gone by its second turn: this lookup then fails
            # (KeyError) after the first use was taken, as in the reference.
            method = user.payment_methods[payment.payment_id]
            if method.source == "gift_card":
                method.amount -= payment.amount
            elif method.source == "certificate":
                user.payment_methods.pop(payment.payment_id)
        for day in booked_days:
            day.available_seats[cabin] -= headcount
        self.db.reservations[reservation_id] = reservation
        self.db.users[user_id].reservations.append(reservation_id)
        return reservation

    @tool(ToolKind.GENERIC)
    def calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression and return the result rounded to 2 decimals.

        Args:
            expression: Numbers with + - * / and parentheses, e.g. '(120 + 80) * 2'.
        """
        if not all(char in ARITHMETIC_CHARS for char in expression):
            raise ValueError("Invalid characters in expression")
        value = eval(expression, {"__builtins__": None}, {})  # noqa: S307 - characters checked above
        return str(round(float(value), 2))

    @tool(ToolKind.WRITE)
    def cancel_reservation(self, reservation_id: str) -> Reservation:
        """Cancel a whole reservation: every payment in its history is refunded to the method
        it came from and the reservation is marked cancelled.

        Args:
            reservation_id: Id of the reservation, e.g. 'ZFA04Y'.
        """
        reservation = self._get_reservation(reservation_id)
        refunds = [
            Payment(payment_id=payment.payment_id, amount=-payment.amount)
            for payment in reservation.payment_history
        ]
        reservation.payment_history.extend(refunds)
        reservation.status = "cancelled"
        return reservation

    @tool(ToolKind.READ)
    def get_reservation_details(self, reservation_id: str) -> Reservation:
        """Show a reservation: flights, passengers, cabin, bags, insurance and payments.

        Args:
            reservation_id: Id of the reservation, e.g. '8JX2WO'.
        """
        return self._get_reservation(reservation_id, writable=False)

    @tool(ToolKind.READ)
    def get_user_details(self, user_id: str) -> User:
        """Show a user's profile: contact details, membership, saved payment methods (with
        gift card and certificate balances), saved passengers and reservation ids.

        Args:
            user_id: Id of the user, e.g. 'sara_doe_496'.
        """
        return self._get_user(user_id, writable=False)

    @tool(ToolKind.READ)
    def list_all_airports(self) -> list[AirportCode]:
        """List every airport the airline serves, with its IATA code and city."""
        return airport_codes()

    @tool(ToolKind.READ)
    def search_direct_flight(self, origin: str, destination: str, date: str) -> list[DirectFlight]:
        """Find nonstop flights between two airports that can be booked on a date, with their
        seats left and prices per cabin.

        Args:
            origin: IATA code of the departure airport, e.g. 'JFK'.
            destination: IATA code of the arrival airport, e.g. 'LAX'.
            date: Departure date, YYYY-MM-DD, e.g. '2024-05-01'.
        """
        return self._available_flights(date, origin=origin, destination=destination)

    @tool(ToolKind.READ)
    def search_onestop_flight(
        self, origin: str, destination: str, date: str
    ) -> list[tuple[DirectFlight, DirectFlight]]:
        """Find two-flight connections between two airports leaving on a date. Each result is
        a pair [first flight, connecting flight]; the connection departs after the first
        flight's scheduled arrival (on the next day when that arrival is marked "+1").

        Args:
            origin: IATA code of the departure airport, e.g. 'JFK'.
            destination: IATA code of the final arrival airport, e.g. 'LAX'.
            date: Departure date of the first flight, YYYY-MM-DD, e.g. '2024-05-01'.
        """
        pairs = []
        for first in self._available_flights(date, origin=origin):
            first.date = date
            arrival = first.scheduled_arrival_time_est
            # Day arithmetic as in the reference: within May 2024, without zero padding.
            connection_date = f"2024-05-{int(date[-2:]) + 1}" if "+1" in arrival else date
            for second in self._available_flights(
                connection_date,
                origin=first.destination,
                destination=destination,
                leave_after=arrival,
            ):
                second.date = connection_date
                pairs.append([first, second])
        return pairs

    @tool(ToolKind.WRITE)
    def send_certificate(self, user_id: str, amount: int) -> str:
        """Add a travel certificate worth `amount` dollars to a user's payment methods. Use it
        only when the policy calls for compensation.

        Args:
            user_id: Id of the user to compensate, e.g. 'sara_doe_496'.
            amount: Value of the certificate in dollars.
        """
        user = self._get_user(user_id)
        for certificate_id in NEW_CERTIFICATE_IDS:
            if certificate_id not in user.payment_methods:
                user.payment_methods[certificate_id] = Certificate(
                    id=certificate_id, amount=amount, source="certificate"
                )
                return f"Certificate {certificate_id} added to user {user_id} with amount {amount}."
        raise ValueError("Too many certificates")

    @tool(ToolKind.GENERIC)
    def transfer_to_human_agents(self, summary: str) -> str:
        """Hand the conversation to a human agent. Use it only when the user asks for a human,
        or when the policy and your tools cannot resolve the request.

        Args:
            summary: What the user needs, in a few sentences, for the human agent.
        """
        return "Transfer successful"

    @tool(ToolKind.WRITE)
    def update_reservation_baggages(
        self, reservation_id: str, total_baggages: int, nonfree_baggages: int, payment_id: str
    ) -> Reservation:
        """Change a reservation's checked bags. Each added non-free bag costs $50, charged to
        a saved credit card or gift card (not a certificate); removing bags refunds nothing.

        Args:
            reservation_id: Id of the reservation, e.g. 'ZFA04Y'.
            total_baggages: New total number of checked bags.
            nonfree_baggages: New number of charged bags.
            payment_id: Id of a saved payment method, e.g. 'credit_card_7815826' or
                'gift_card_7815826'.
        """
        reservation = self._get_reservation(reservation_id)
        user = self._get_user(reservation.user_id)
        price = CHECKED_BAG_FEE * max(0, nonfree_baggages - reservation.nonfree_baggages)
        payment = self._charge_for_change(user, payment_id, price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.total_baggages = total_baggages
        reservation.nonfree_baggages = nonfree_baggages
        return reservation

    @tool(ToolKind.WRITE)
    def update_reservation_flights(
        self,
        reservation_id: str,
        cabin: CabinClass,
        flights: list[FlightInfo | dict],
        payment_id: str,
    ) -> Reservation:
        """Replace a reservation's flights and/or cabin. List EVERY flight of the new itinerary,
        including unchanged ones. Segments kept in the same cabin keep their original price;
        others are priced now. The difference from what was paid is charged to (or, when
        negative, credited to) a saved credit card or gift card; certificates are refused.

        Args:
            reservation_id: Id of the reservation, e.g. 'ZFA04Y'.
            cabin: Cabin for the whole reservation: 'basic_economy', 'economy' or 'business'.
            flights: The complete new itinerary, each {"flight_number", "date"}.
            payment_id: Id of a saved payment method, e.g. 'credit_card_7815826' or
                'gift_card_7815826'.
        """
        flights = _records_from_dicts(flights, FlightInfo)
        reservation = self._get_reservation(reservation_id)
        user = self._get_user(reservation.user_id)

        headcount = len(reservation.passengers)
        total_price = 0
        new_flights = []
        for segment in flights:
            kept = next(
                (
                    booked
                    for booked in reservation.flights
                    if booked.flight_number == segment.flight_number
                    and booked.date == segment.date
                    and cabin == reservation.cabin
                ),
                None,
            )
            if kept:
                total_price += kept.price * headcount
                new_flights.append(kept)
                continue
            flight = self._get_flight(segment.flight_number)
            day = self._get_flight_instance(segment.flight_number, segment.date)
            if not isinstance(day, FlightDateStatusAvailable):
                raise ValueError(
                    f"Flight {segment.flight_number} not available on date {segment.date}"
                )
            if day.available_seats[cabin] < headcount:
                raise ValueError(f"Not enough seats on flight {segment.flight_number}")
            added = ReservationFlight(
                flight_number=segment.flight_number,
                date=segment.date,
                price=day.prices[cabin],
                origin=flight.origin,
                destination=flight.destination,
            )
            total_price += added.price * headcount
            new_flights.append(added)
        total_price -= sum(booked.price for booked in reservation.flights) * headcount

        payment = self._charge_for_change(user, payment_id, total_price)
        if payment is not None:
            reservation.payment_history.append(payment)
        reservation.flights = new_flights
        reservation.cabin = cabin
        # Seat counts are deliberately left alone, as in the reference.
        return reservation

    @tool(ToolKind.WRITE)
    def update_reservation_passengers(
        self, reservation_id: str, passengers: list[Passenger | dict]
    ) -> Reservation:
        """Replace the passengers' details on a reservation. The number of passengers cannot
        change.

        Args:
            reservation_id: Id of the reservation, e.g. 'ZFA04Y'.
            passengers: Every passenger, in order, each {"first_name", "last_name", "dob"}.
        """
        passengers = _records_from_dicts(passengers, Passenger)
        reservation = self._get_reservation(reservation_id)
        if len(passengers) != len(reservation.passengers):
            raise ValueError("Number of passengers does not match")
        reservation.passengers = deepcopy(passengers)
        return reservation

    @tool(ToolKind.READ)
    def get_flight_status(self, flight_number: str, date: str) -> str:
        """Tell a flight's status on a date: available, on time, delayed, flying, landed or
        cancelled.

        Args:
            flight_number: Flight number, e.g. 'HAT001'.
            date: Date of the flight, YYYY-MM-DD.
        """
        return self._get_flight_instance(flight_number, date, writable=False).status
