"""The airports the airline serves, in the order the airport listing shows them."""

from __future__ import annotations

from tau_mcp.servers.domains.airline.models import AirportCode

SERVED_AIRPORTS: tuple[tuple[str, str], ...] = (
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
)


def airport_codes() -> list[AirportCode]:
    """Fresh records on every call, so callers may not alter a shared list."""
    return [AirportCode(iata=iata, city=city) for iata, city in SERVED_AIRPORTS]
