"""FastMCP servers whose tools are one domain side's engine tools, acting on an episode.

One server serves one (domain, side) pair for every episode: which episode a call acts on is
decided per request by a resolver (over HTTP, the episode named in the URL path; over stdio,
the process's only episode). Tool results carry exactly the engine's text, or, on the Eval
Protocol path, that text reshaped into a JSON object.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any, Literal

from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.resources import FunctionResource, TextResource
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tau_mcp.conversation.tools import COST_META
from tau_mcp.servers import compat
from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode, ToolOutcome
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.toolkit import Side, ToolSpec
from tau_mcp.servers.mcp_listing import annotation_hints, server_name, tool_title
from tau_mcp.servers.surfaces import Surface
from tau_mcp.servers.version import package_version

log = logging.getLogger("tau.server")

# Finds the episode a call acts on; raises EngineError (e.g. UnknownEpisode) when there is none.
EpisodeResolver = Callable[[], Episode]
ResultStyle = Literal["reference", "json_object"]

# Eval Protocol path: wrap array/scalar/plain-text results as {"result": ...} (on by default).
EP_WRAP_ENV = "TAU_EP_WRAP_RESULTS"


def ep_wrap_default() -> bool:
    return os.environ.get(EP_WRAP_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _text_result(text: str, error: bool, cost: float = 0.0) -> ToolResult:
    meta = {COST_META: cost} if cost else None
    return ToolResult(content=[TextContent(type="text", text=text)], is_error=error, meta=meta)


def reference_result(outcome: ToolOutcome) -> ToolResult:
    """The engine's text unchanged; `isError` when the engine reports a failure; what the
    call's model calls cost in `_meta` when they cost something."""
    return _text_result(outcome.text, outcome.error, outcome.cost)


async def call_tool(
    episode: Episode, side: Side, name: str, arguments: dict[str, Any]
) -> ToolOutcome:
    """One tool call on an episode, as a result (never an exception); slow tools run off the
    event loop (`Episode.call_async`)."""
    try:
        return await episode.call_async(side, name, arguments)
    except EngineError as exc:
        return ToolOutcome(f"Error: {exc}", True)
    except Exception as exc:  # noqa: BLE001 - a client must get a result, never a crash
        log.exception("tool %s failed outside the engine", name)
        return ToolOutcome(f"Error: internal server error ({type(exc).__name__})", True)


def json_object_result(outcome: ToolOutcome, wrap: bool = True) -> ToolResult:
    """The Eval Protocol shape: the first text block is always a JSON object when `wrap`
    (failures become {"error": message}); without `wrap` only failures are reshaped."""
    if outcome.error:
        message = outcome.text.removeprefix("Error: ")
        return _text_result(json.dumps({"error": message}), True, outcome.cost)
    if not wrap:
        return _text_result(outcome.text, False, outcome.cost)
    try:
        value = json.loads(outcome.text)
    except (json.JSONDecodeError, TypeError):
        value = outcome.text
    if isinstance(value, dict):
        return _text_result(outcome.text, False, outcome.cost)
    return _text_result(json.dumps({"result": value}), False, outcome.cost)


def tool_annotations(spec: ToolSpec) -> ToolAnnotations:
    """Hints for clients (see `tau_mcp.servers.mcp_listing.annotation_hints`)."""
    return ToolAnnotations.model_validate(annotation_hints(spec))


class EpisodeTool(Tool):
    """One engine tool. Arguments reach the engine exactly as the client sent them, so bad
    arguments fail with the same text as in the reference."""

    side: SkipJsonSchema[str] = Field(exclude=True)
    resolve: SkipJsonSchema[Any] = Field(exclude=True)
    shape: SkipJsonSchema[Any] = Field(exclude=True)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        try:
            episode = self.resolve()
        except EngineError as exc:
            return self.shape(ToolOutcome(f"Error: {exc}", True))
        return self.shape(await call_tool(episode, self.side, self.name, arguments))


class UnknownToolsToEngine(Middleware):
    """A call to a tool this side does not have gets the engine's own answer (the reference's
    "Error: Tool 'x' not found."), not FastMCP's wording."""

    def __init__(
        self, side: Side, resolve: EpisodeResolver, shape: Callable[[ToolOutcome], ToolResult]
    ) -> None:
        self.side, self.resolve, self.shape = side, resolve, shape

    async def on_call_tool(self, context: MiddlewareContext, call_next) -> ToolResult:
        try:
            return await call_next(context)
        except NotFoundError:
            try:
                episode = self.resolve()
            except EngineError as exc:
                return self.shape(ToolOutcome(f"Error: {exc}", True))
            message = context.message
            outcome = await call_tool(episode, self.side, message.name, message.arguments or {})
            return self.shape(outcome)


def _instructions(domain: Domain, side: Side) -> str:
    if side == "agent":
        return (
            f"Customer-service agent tools of the tau2 '{domain.name}' domain. Follow the policy "
            f"in the resource tau2://{domain.name}/policy."
        )
    return (
        f"Tools of the simulated customer in the tau2 '{domain.name}' domain. Guidelines for "
        f"playing the customer are in the resource tau2://{domain.name}/user-guidelines."
    )


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

        def shape(outcome: ToolOutcome) -> ToolResult:
            return json_object_result(outcome, wrap)
    else:
        shape = reference_result

    server = FastMCP(
        name or server_name(domain.name, side),
        instructions=_instructions(domain, side),
        version=package_version(),
        dereference_schemas=False,
        mask_error_details=False,
        middleware=[UnknownToolsToEngine(side, resolve, shape)],
    )
    listing = surface.tools(domain, side, variant)
    for spec in listing.tools:
        server.add_tool(
            EpisodeTool(
                name=spec.name,
                title=tool_title(spec.name),
                description=spec.description,
                parameters=spec.input_schema,
                annotations=tool_annotations(spec),
                side=side,
                resolve=resolve,
                shape=shape,
            )
        )
    _add_texts(server, domain, side, variant, resolve)
    # The modern transport checks `Mcp-Param-*` headers against the called tool's schema; give
    # it the schemas directly instead of letting it run a full tools/list on every call.
    compat.serve_input_schemas(server, listing.schemas())
    return server


def _add_texts(
    server: FastMCP,
    domain: Domain,
    side: Side,
    variant: str | None = None,
    resolve: EpisodeResolver | None = None,
) -> None:
    """The agent side reads the domain policy (a retrieval config's); the user side the
    user-simulator guidelines. A config whose policy depends on the task (golden_retrieval)
    gives each episode its own task's policy."""
    try:
        if side == "agent" and variant is not None:
            resolved = domain.resolve_variant(variant)
            uri, title = f"tau2://{domain.name}/policy", f"{domain.name} agent policy ({variant})"
            if resolved.policy_per_task and resolve is not None:
                server.add_resource(
                    FunctionResource.from_function(
                        lambda: _episode_policy(resolve()),
                        uri=uri,
                        name="policy",
                        title=title,
                        mime_type="text/markdown",
                    )
                )
                return
            text = resolved.policy(None)
        elif side == "agent":
            text = domain.policy()
            uri, title = f"tau2://{domain.name}/policy", f"{domain.name} agent policy"
        else:
            with_tools = domain.spec.user_tools is not None
            text = datafiles.user_guidelines(domain.data_dir, with_tools)
            uri, title = f"tau2://{domain.name}/user-guidelines", "user simulator guidelines"
    except EngineError as exc:
        log.warning("no text resource for %s/%s: %s", domain.name, side, exc)
        return
    server.add_resource(
        TextResource(
            uri=uri, name=uri.rsplit("/", 1)[-1], title=title, text=text, mime_type="text/markdown"
        )
    )


def _episode_policy(episode: Episode) -> str:
    """The agent's policy in `episode`: its retrieval config's, for its task."""
    variant = episode.variant
    return variant.policy(episode.task) if variant is not None else episode.domain.policy()
