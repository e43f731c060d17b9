"""The original τ-bench's retail domain (`tau-bench-retail`): splits test, train and dev."""

from tau_mcp.servers.domains.tau_bench.spec import tau_bench_spec
from tau_mcp.servers.domains.tau_bench_retail.models import RetailData
from tau_mcp.servers.domains.tau_bench_retail.tools import RetailTools

SPEC = tau_bench_spec(
    name="tau-bench-retail",
    folder="retail",
    db_model=RetailData,
    tools=RetailTools,
    splits=("test", "train", "dev"),
)
