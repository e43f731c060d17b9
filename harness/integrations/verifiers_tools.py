"""The tools the verifiers environment declares to the policy model (its `tool_defs`).

Kept apart from `tau_mcp.harness.integrations.verifiers_env`, which needs the heavy `verifiers` package,
so the surface registry (`tau_mcp.servers.surfaces`) knows this surface wherever tau-mcp is installed.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.variants import Variant
from tau_mcp.servers.surfaces import ShownTool, View, register_surface, variant_name


def verifiers_tool_defs(domain: Domain, variant: Variant | None = None) -> list[dict[str, Any]]:
    """The domain's agent tools (its retrieval config's, given one) as verifiers' `tool_defs`:
    name, description, parameters."""
    listing = VERIFIERS_ENV.tools(domain, "agent", variant_name(variant))
    return [
        {"name": spec.name, "description": spec.description, "parameters": spec.input_schema}
        for spec in listing.tools
    ]


async def _shown_to_policy(domain: Domain, view: View, variant: str | None) -> list[ShownTool]:
    # As `TauMcpEnv` does: the config is resolved first (one that cannot run here is refused).
    return verifiers_tool_defs(domain, domain.resolve_variant(variant, None))


#: `tau_mcp.harness.integrations.verifiers_env.TauMcpEnv`: the policy model's tool definitions.
VERIFIERS_ENV = register_surface("verifiers environment (tool_defs)", ("agent",), _shown_to_policy)
