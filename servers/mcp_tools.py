"""`tau-server`'s FastMCP servers: one domain side's engine tools, acting on an episode.

One server serves one (domain, side) pair for every episode: which episode a call acts on is
decided per request by a resolver (over HTTP, the episode named in the URL path; over stdio,
the process's only episode). Tool results carry exactly the engine's text, or, on the Eval
Protocol path, that text reshaped into a JSON object. The server is assembled by
`tau_mcp.servers.mcp_assembly` from the side's listing, the episode call strategy below and the
side's text (the policy, or the user guidelines).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from fastmcp import FastMCP

from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode, ToolOutcome
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.toolkit import Side
from tau_mcp.servers.mcp_assembly import (
    CallStrategy,
    McpText,
    agent_policy,
    assemble_mcp,
    policy_text,
)
from tau_mcp.servers.mcp_calls import as_json_object, call_on_episode, ep_wrap_default, failure
from tau_mcp.servers.mcp_listing import (
    TAU2,
    benchmark_title,
    listed_tools,
    resource_uri,
    server_name,
)
from tau_mcp.servers.surfaces import Surface
from tau_mcp.servers.version import package_version

log = logging.getLogger("tau.server")

# Finds the episode a call acts on; raises EngineError (e.g. UnknownEpisode) when there is none.
EpisodeResolver = Callable[[], Episode]
ResultStyle = Literal["reference", "json_object"]


def episode_calls(
    side: Side, resolve: EpisodeResolver, shape: Callable[[ToolOutcome], ToolOutcome]
) -> CallStrategy:
    """Every call runs on the episode of the request, the result shaped by `shape`."""

    async def call(name: str, arguments: dict) -> ToolOutcome:
        try:
            episode = resolve()
        except EngineError as exc:
            return shape(failure(exc))
        return shape(await call_on_episode(episode, side, name, arguments))

    return call


def _instructions(domain: Domain, side: Side) -> str:
    benchmark = benchmark_title(domain)
    if side == "agent":
        return (
            f"Customer-service agent tools of the {benchmark} '{domain.name}' domain. Follow "
            f"the policy in the resource {resource_uri(domain, 'policy')}."
        )
    if not _has_guidelines(domain):
        return f"The simulated customer's side of the {benchmark} '{domain.name}' domain."
    return (
        f"Tools of the simulated customer in the {benchmark} '{domain.name}' domain. Guidelines "
        f"for playing the customer are in the resource {resource_uri(domain, 'user-guidelines')}."
    )


def _has_guidelines(domain: Domain) -> bool:
    """tau2's user-simulator guidelines are for tau2's domains (the original τ-bench's user
    simulator has its own prompt and no tools)."""
    return domain.spec.benchmark == TAU2


def build_mcp_server(
    domain: Domain,
    side: Side,
    resolve: EpisodeResolver,
    surface: Surface,
    *,
    style: ResultStyle = "reference",
    wrap_ep_results: bool | None = None,
    name: str | None = None,
    variant: str | None = None,
) -> FastMCP:
    """A FastMCP server listing exactly the tools of one side of a domain as `surface` shows
    them (the one listing: the reference's texts when the data carries them)."""
    wrap = ep_wrap_default() if wrap_ep_results is None else wrap_ep_results
    if style == "json_object":

        def shape(outcome: ToolOutcome) -> ToolOutcome:
            return as_json_object(outcome, wrap)
    else:

        def shape(outcome: ToolOutcome) -> ToolOutcome:
            return outcome

    return assemble_mcp(
        name or server_name(domain, side),
        listed_tools(surface.tools(domain, side, variant)),
        episode_calls(side, resolve, shape),
        instructions=_instructions(domain, side),
        texts=_texts(domain, side, variant, resolve),
        version=package_version(),
    )


def _texts(
    domain: Domain, side: Side, variant: str | None, resolve: EpisodeResolver
) -> list[McpText]:
    """The agent side reads the domain policy (a retrieval config's); the user side the
    user-simulator guidelines. A config whose policy depends on the task (golden_retrieval)
    gives each episode its own task's policy."""
    try:
        if side == "agent":
            resolved = domain.resolve_variant(variant) if variant is not None else None
            policy = agent_policy(domain, resolved, lambda: _episode_policy(resolve()))
            return [policy_text(domain, policy, variant)]
        if not _has_guidelines(domain):
            return []
        with_tools = domain.spec.user_tools is not None
        text = datafiles.user_guidelines(domain.data_dir, with_tools)
    except EngineError as exc:
        log.warning("no text resource for %s/%s: %s", domain.name, side, exc)
        return []
    uri = resource_uri(domain, "user-guidelines")
    return [McpText(uri, "user-guidelines", "user simulator guidelines", text)]


def _episode_policy(episode: Episode) -> str:
    """The agent's policy in `episode`: its retrieval config's, for its task."""
    variant = episode.variant
    return variant.policy(episode.task) if variant is not None else episode.domain.policy()
