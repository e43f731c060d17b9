"""The MCP server an outside agent plays a simulation on: the domain's agent tools, exactly as
the episode's agent endpoint on `tau-server` lists them (the one listing of `tau_mcp.servers.surfaces`:
the reference's names, texts, schemas and order when the data carries them), then one tool of
ours, `send_message_to_user`, the agent's way to speak to the customer (the reference's agent
speaks in plain assistant messages, which an MCP client cannot send). Every call is one agent
move on the simulation named in the URL path. The server is assembled by
`tau_mcp.servers.mcp_assembly` from that listing, the move strategy below and the policy.

The server's instructions and its policy resource are the agent's policy. When a retrieval
config makes the policy depend on the task (banking_knowledge's `golden_retrieval` puts the
task's documents in it), both are the policy of the simulation the request is for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastmcp import FastMCP

from tau_mcp.conversation.messages import ChatMessage, ToolCall
from tau_mcp.harness.serve.channel import Answer, MoveChannel
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import ToolOutcome
from tau_mcp.servers.engine.tool_listing import ToolListing
from tau_mcp.servers.engine.variants import Variant
from tau_mcp.servers.limits import MAX_MESSAGE_CHARS, FieldError, text_field
from tau_mcp.servers.mcp_assembly import CallStrategy, agent_policy, assemble_mcp, policy_text
from tau_mcp.servers.mcp_listing import ListedTool, listed_tools, named

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
SEND_MESSAGE_TOOL = ListedTool(
    SEND_MESSAGE,
    SEND_MESSAGE_DESCRIPTION,
    SEND_MESSAGE_SCHEMA,
    {
        "destructiveHint": False,
        "idempotentHint": False,
        "openWorldHint": True,
        "readOnlyHint": False,
    },
)

# Finds the channel of the simulation a request is for (from the HTTP request's scope).
ChannelResolver = Callable[[], MoveChannel]
# The agent's policy in the simulation a request is for.
PolicyResolver = Callable[[], str]


def _outcome(answer: Answer) -> ToolOutcome:
    return ToolOutcome(answer.text, answer.error)


async def _tool_move(channel: MoveChannel, name: str, arguments: dict[str, Any]) -> ToolOutcome:
    """One of the domain's agent tools (or a tool it does not have), played as the agent's
    move: the orchestrator runs it on the episode and records it as in a harness run."""
    call = ToolCall(id=channel.call_id(), name=name, arguments=dict(arguments))
    message = ChatMessage(role="assistant", content=None, tool_calls=[call])
    return _outcome(await channel.play(message))


async def _text_move(channel: MoveChannel, arguments: dict[str, Any]) -> ToolOutcome:
    """The agent's text turn; the result is the customer's reply."""
    text = arguments.get("message")
    if not isinstance(text, str) or not text.strip():
        if channel.closed:
            return _outcome(Answer(channel.refusal or "", True))
        return _outcome(Answer("Error: 'message' must be a non-empty string.", True))
    try:
        text_field(arguments, "message", max_chars=MAX_MESSAGE_CHARS)
    except FieldError as exc:
        return _outcome(Answer(f"Error: {exc}.", True))
    return _outcome(await channel.play(ChatMessage(role="assistant", content=text)))


def simulation_moves(resolve: ChannelResolver) -> CallStrategy:
    """Every call is one agent move in the simulation of the request: `send_message_to_user`
    a text turn, any other name a tool call (one the domain does not have is answered by the
    episode with the reference's "Error: Tool 'x' not found." and counts as a failed call)."""

    async def call(name: str, arguments: dict[str, Any]) -> ToolOutcome:
        channel = resolve()
        if name == SEND_MESSAGE:
            return await _text_move(channel, arguments)
        return await _tool_move(channel, name, arguments)

    return call


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
    policy = agent_policy(domain, variant, resolve_policy)
    return assemble_mcp(
        named(domain, "simulation"),
        [*listed_tools(listing), SEND_MESSAGE_TOOL],
        simulation_moves(resolve),
        instructions=policy,
        texts=[policy_text(domain, policy)],
    )
