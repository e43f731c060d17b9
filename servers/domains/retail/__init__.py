"""The retail domain: an online store's customer service (orders, returns, exchanges)."""

from tau_mcp.servers.domains.retail.agent_tools import RetailTools
from tau_mcp.servers.domains.retail.models import RetailDB
from tau_mcp.servers.engine.domain import DomainSpec

# The reference has no user-side tools or user database for retail, and no solo-mode policy.
SPEC = DomainSpec(
    name="retail",
    db_model=RetailDB,
    agent_tools=RetailTools,
    policy_files=("policy.md",),
    solo_policy_files=(),
)
