"""The mock domain: users, their tasks, and a notification inbox on the user's side."""

from tau_mcp.servers.domains.mock.agent_tools import MockTools
from tau_mcp.servers.domains.mock.models import MockDB, MockUserDB
from tau_mcp.servers.domains.mock.user_tools import MockUserTools
from tau_mcp.servers.engine.domain import DomainSpec

SPEC = DomainSpec(
    name="mock",
    db_model=MockDB,
    agent_tools=MockTools,
    user_db_model=MockUserDB,
    user_tools=MockUserTools,
    policy_files=("policy.md",),
    solo_policy_files=("policy_solo.md",),
)
