"""The MCP server an outside agent plays a simulation on: the domain's agent tools, exactly as
the episode's agent endpoint on `tau-server` lists them (the one listing of `tau_mcp.servers.surfaces`:
the reference's names, texts, schemas and order when the data carries them), then one tool of
ours, `send_message_to_user`, the agent's way to speak to the customer (the reference's agent
speaks in plain assistant messages, which an MCP client cannot send). Every call is one agent
move on the simulation named in the URL path.

The server's instructions and its policy resource are the agent's policy. When a retrieval
config makes the policy depend on the task (banking_knowledge's `golden_retrieval` puts the
task's documents in it), both are the policy of the simulation the request is for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.resources import FunctionResource, TextResource
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools.base import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tau_mcp.conversation.messages import ChatMessage, ToolCall
from tau_mcp.harness.serve.channel import Answer, MoveChannel
from tau_mcp.servers import compat
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tool_listing import ToolListing
from tau_mcp.servers.engine.variants import Variant
from tau_mcp.servers.limits import MAX_MESSAGE_CHARS, FieldError, text_field
from tau_mcp.servers.mcp_listing import tool_title
from tau_mcp.servers.mcp_tools import tool_annotations

SEND_MESSAGE = "send_message_to_user"
SEND_MESSAGE_DESCRIPTION = (
    "Send your next message to the customer and get their reply. This is how you talk to the "
    "customer: your first call opens the conversation (greet them), and the conversation goes "
    "on until the customer ends it. Write to the customer only through this tool."
)
SEND_MESSAGE_SCHEMA = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "Your message to the customer."},
    },
    "required": ["message"],
}

# Finds the channel of the simulation a request is for (from the HTTP request's scope).
ChannelResolver = Callable[[], MoveChannel]
# The agent's policy in the simulation a request is for.
PolicyResolver = Callable[[], str]


def _result(answer: Answer) -> ToolResult:
    return ToolResult(content=[TextContent(type="text", text=answer.text)], is_error=answer.error)


async def _call(resolve: ChannelResolver, name: str, arguments: dict[str, Any]) -> ToolResult:
    channel = resolve()
    call = ToolCall(id=channel.call_id(), name=name, arguments=dict(arguments))
    message = ChatMessage(role="assistant", content=None, tool_calls=[call])
    return _result(await channel.play(message))


class MoveTool(Tool):
    """One of the domain's agent tools; the call is played as the agent's move, so the
    orchestrator runs it on the episode and records it as in a harness run."""

    resolve: SkipJsonSchema[Any] = Field(exclude=True)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return await _call(self.resolve, self.name, arguments)


class SendMessageTool(Tool):
    """The agent's text turn; the result is the customer's reply."""

    resolve: SkipJsonSchema[Any] = Field(exclude=True)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        channel = self.resolve()
        text = arguments.get("message")
        if not isinstance(text, str) or not text.strip():
            if channel.closed:
                return _result(Answer(channel.refusal or "", True))
            return _result(Answer("Error: 'message' must be a non-empty string.", True))
        try:
            text_field(arguments, "message", max_chars=MAX_MESSAGE_CHARS)
        except FieldError as exc:
            return _result(Answer(f"Error: {exc}.", True))
        message = ChatMessage(role="assistant", content=text)
        return _result(await channel.play(message))


class UnknownToolsAsMoves(Middleware):
    """A call to a tool the domain does not have is still the agent's move: the episode answers
    it with the reference's "Error: Tool 'x' not found." and it counts as a failed call."""

    def __init__(self, resolve: ChannelResolver) -> None:
        self.resolve = resolve

    async def on_call_tool(self, context: MiddlewareContext, call_next) -> ToolResult:
        try:
            return await call_next(context)
        except NotFoundError:
            message = context.message
            return await _call(self.resolve, message.name, message.arguments or {})


class TaskPolicy(Middleware):
    """The policy of the simulation's own task as the server's instructions, in the answer to
    the legacy `initialize` and to the sessionless protocol's `server/discover`."""

    def __init__(self, resolve_policy: PolicyResolver) -> None:
        self.resolve_policy = resolve_policy

    async def on_initialize(self, context: MiddlewareContext, call_next) -> Any:
        result = await call_next(context)
        if result is None:
            return None
        return result.model_copy(update={"instructions": self.resolve_policy()})

    async def on_discover(self, context: MiddlewareContext, call_next) -> Any:
        result = await call_next(context)
        if isinstance(result, mcp_types.DiscoverResult):
            return result.model_copy(update={"instructions": self.resolve_policy()})
        if isinstance(result, dict) and "serverInfo" in result:
            return {**result, "instructions": self.resolve_policy()}
        return result


def build_simulation_mcp(
    domain: Domain,
    listing: ToolListing,
    resolve: ChannelResolver,
    variant: Variant | None = None,
    resolve_policy: PolicyResolver | None = None,
) -> FastMCP:
    """One server for every simulation of the domain; the policy is its instructions, the agent
    tools of `listing` (the serve surface's, `tau_mcp.harness.serve.app.SIMULATION_ENDPOINT`) its moves.
    With a retrieval config (banking_knowledge), its policy; when that policy depends on the
    task, `resolve_policy` gives the one of the simulation a request is for."""
    per_task = variant is not None and variant.policy_per_task
    if per_task and resolve_policy is None:
        raise ValueError(f"retrieval config '{variant.name}' needs each simulation's own policy")
    policy = None if per_task else variant.policy(None) if variant is not None else domain.policy()
    middleware: list[Middleware] = [UnknownToolsAsMoves(resolve)]
    if per_task:
        middleware.append(TaskPolicy(resolve_policy))
    server = FastMCP(
        f"tau2-{domain.name}-simulation",
        instructions=policy,
        dereference_schemas=False,
        mask_error_details=False,
        middleware=middleware,
    )
    for spec in listing.tools:
        server.add_tool(
            MoveTool(
                name=spec.name,
                title=tool_title(spec.name),
                description=spec.description,
                parameters=spec.input_schema,
                annotations=tool_annotations(spec),
                resolve=resolve,
            )
        )
    server.add_tool(
        SendMessageTool(
            name=SEND_MESSAGE,
            title=tool_title(SEND_MESSAGE),
            description=SEND_MESSAGE_DESCRIPTION,
            parameters=SEND_MESSAGE_SCHEMA,
            annotations=ToolAnnotations(
                read_only_hint=False,
                destructive_hint=False,
                idempotent_hint=False,
                open_world_hint=True,
            ),
            resolve=resolve,
        )
    )
    uri, title = f"tau2://{domain.name}/policy", f"{domain.name} agent policy"
    if per_task:
        server.add_resource(
            FunctionResource.from_function(
                resolve_policy, uri=uri, name="policy", title=title, mime_type="text/markdown"
            )
        )
    else:
        server.add_resource(
            TextResource(
                uri=uri, name="policy", title=title, text=policy, mime_type="text/markdown"
            )
        )
    schemas = {**listing.schemas(), SEND_MESSAGE: SEND_MESSAGE_SCHEMA}
    compat.serve_input_schemas(server, schemas)
    return server
