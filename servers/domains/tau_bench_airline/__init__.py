"""The original τ-bench's airline domain (`tau-bench-airline`): one split, test."""

from tau_mcp.servers.domains.tau_bench.spec import tau_bench_spec
from tau_mcp.servers.domains.tau_bench_airline.models import AirlineData
from tau_mcp.servers.domains.tau_bench_airline.tools import AirlineTools

SPEC = tau_bench_spec(
    name="tau-bench-airline",
    folder="airline",
    db_model=AirlineData,
    tools=AirlineTools,
    splits=("test",),
)
