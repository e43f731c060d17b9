"""The telecom domain: a carrier's support agent and a customer troubleshooting their phone.

The agent works on the carrier's records (TelecomDB); the customer acts on their own phone
(TelecomUserDB). A sync step after every call keeps the two consistent.
"""

from tau_mcp.servers.domains.telecom.agent_tools import TelecomTools
from tau_mcp.servers.domains.telecom.hashing import hash_view
from tau_mcp.servers.domains.telecom.models import TelecomDB
from tau_mcp.servers.domains.telecom.sync import sync_phone_with_carrier
from tau_mcp.servers.domains.telecom.user_models import TelecomUserDB
from tau_mcp.servers.domains.telecom.user_tools import TelecomUserTools
from tau_mcp.servers.engine.domain import DomainSpec


def tagged_policy(texts: list[str]) -> str:
    """The main policy and the technical-support manual, each wrapped in its own tag."""
    main, tech_support = texts
    return (
        f"<main_policy>\n{main}\n</main_policy>\n"
        f"<tech_support_policy>\n{tech_support}\n</tech_support_policy>"
    )


SPEC = DomainSpec(
    name="telecom",
    db_model=TelecomDB,
    agent_tools=TelecomTools,
    user_db_model=TelecomUserDB,
    user_tools=TelecomUserTools,
    policy_files=("main_policy.md", "tech_support_manual.md"),
    solo_policy_files=("main_policy_solo.md", "tech_support_manual.md"),
    policy_layout=tagged_policy,
    sync=sync_phone_with_carrier,
    hash_view=hash_view,
    splits=("base", "train", "test", "small", "full"),
)
