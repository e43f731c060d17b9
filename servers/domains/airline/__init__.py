"""The airline domain: flights, users and their reservations; the user has no tools."""

from tau_mcp.servers.domains.airline.agent_tools import AirlineTools
from tau_mcp.servers.domains.airline.models import FlightDB
from tau_mcp.servers.engine.domain import DomainSpec

SPEC = DomainSpec(
    name="airline",
    db_model=FlightDB,
    agent_tools=AirlineTools,
    policy_files=("policy.md",),
    # The reference offers no solo mode for this domain.
    solo_policy_files=(),
)
