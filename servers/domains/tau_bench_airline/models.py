"""The original τ-bench airline data: flights, reservations and users, as `json.load` reads them.

Field order is the data files' key order and the types are those of the data as loaded (see
`tau_bench.records`). A flight's date has one of the data's shapes, told apart by its keys: seats
and prices while it can be booked, actual or estimated times once it flies. What a tool writes
afterwards (a booking's flights, passengers and payments are the caller's JSON) is kept as
written, and keys a tool adds (a cancelled reservation's `status`) go after the others.
"""

from __future__ import annotations

from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field

from tau_mcp.servers.domains.tau_bench.records import Address, Name, Record


class _DateShape(Record):
    # Only the shape's own keys, so the union below matches exactly one shape per date.
    model_config = ConfigDict(extra="forbid")

    status: str


class BookableDate(_DateShape):
    available_seats: dict[str, int]
    prices: dict[str, int]


class LandedDate(_DateShape):
    actual_departure_time_est: str
    actual_arrival_time_est: str


class FlyingDate(_DateShape):
    actual_departure_time_est: str
    estimated_arrival_time_est: str


class ScheduledDate(_DateShape):
    """On time or delayed: estimated times."""

    estimated_departure_time_est: str
    estimated_arrival_time_est: str


class CancelledDate(_DateShape):
    pass


FlightDate = Annotated[
    Union[BookableDate, LandedDate, FlyingDate, ScheduledDate, CancelledDate],  # noqa: UP007
    Field(union_mode="left_to_right"),
]


class Flight(Record):
    flight_number: str
    origin: str
    destination: str
    scheduled_departure_time_est: str
    scheduled_arrival_time_est: str
    dates: dict[str, FlightDate]


class ReservationFlight(Record):
    origin: str
    destination: str
    flight_number: str
    date: str
    price: int


class Passenger(Record):
    first_name: str
    last_name: str
    dob: str


class PaymentRecord(Record):
    payment_id: str
    amount: int


class Reservation(Record):
    reservation_id: str
    user_id: str
    origin: str
    destination: str
    flight_type: str
    cabin: str
    flights: list[ReservationFlight]
    passengers: list[Passenger]
    payment_history: list[PaymentRecord]
    created_at: str
    total_baggages: int
    nonfree_baggages: int
    insurance: str


class CreditCard(Record):
    source: Literal["credit_card"]
    brand: str
    last_four: str
    id: str


class GiftCard(Record):
    source: Literal["gift_card"]
    amount: int | float
    id: str


class Certificate(Record):
    source: Literal["certificate"]
    amount: int | float
    id: str


PaymentMethod = Annotated[
    Union[CreditCard, GiftCard, Certificate],  # noqa: UP007
    Field(discriminator="source"),
]


class User(Record):
    name: Name
    address: Address
    email: str
    dob: str
    payment_methods: dict[str, PaymentMethod]
    saved_passengers: list[Passenger]
    membership: str
    reservations: list[str]


class AirlineData(BaseModel):
    """The original's `env.data` for airline, in its key order."""

    model_config = ConfigDict(extra="forbid")

    flights: dict[str, Flight]
    reservations: dict[str, Reservation]
    users: dict[str, User]
