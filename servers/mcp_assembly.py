"""The one way tau-mcp builds a FastMCP server: a tool listing, a call strategy, text resources.

Both MCP servers of the project are assembled here and differ only in what they hand in:

- `tau-server`'s endpoints (`tau_mcp.servers.mcp_tools`): one domain side's tools; a call runs
  on the episode of the request; the resource is the policy (or the user guidelines).
- `tau-harness serve`'s simulation endpoint (`tau_mcp.harness.serve.endpoint`): the agent's
  tools plus `send_message_to_user`; a call is the agent's move in the simulation of the
  request; the policy is the resource and the instructions.

The call strategy answers every `tools/call`, of a listed tool or not: a name the server does
not list is still handed to it (so the engine answers it with the reference's
"Error: Tool 'x' not found." and it counts as a failed call), never FastMCP's own wording. It
returns the engine's `ToolOutcome`; rendering it (one text block, `isError`, what the call's
model calls cost in `_meta`) is done here, once.

A text (the policy) is static, or read per request when it depends on the task of the episode
or simulation the request is for; per-request instructions are given in the answers to the
legacy `initialize` and to the sessionless `server/discover`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import NotFoundError
from fastmcp.resources import FunctionResource, TextResource
from fastmcp.server.middleware import Middleware, MiddlewareContext
from fastmcp.tools import Tool, ToolResult
from mcp_types import TextContent, ToolAnnotations
from pydantic import Field
from pydantic.json_schema import SkipJsonSchema

from tau_mcp.servers import compat
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import ToolOutcome
from tau_mcp.servers.engine.variants import Variant
from tau_mcp.servers.mcp_calls import result_meta
from tau_mcp.servers.mcp_listing import ListedTool, resource_uri

#: How a call is executed: (tool name, arguments as the client sent them) -> the outcome.
CallStrategy = Callable[[str, dict[str, Any]], Awaitable[ToolOutcome]]
#: A text served as it is, or read for the request being answered.
Text = str | Callable[[], str]


@dataclass(frozen=True)
class McpText:
    """A markdown resource of the server (the policy, the user guidelines)."""

    uri: str
    name: str
    title: str
    text: Text


def rendered(outcome: ToolOutcome) -> ToolResult:
    """An outcome as an MCP result: its text, `isError` when it failed, its cost and the
    injected fault it met in `_meta` (`mcp_calls.result_meta`)."""
    meta = result_meta(outcome)
    content = [TextContent(type="text", text=outcome.text)]
    return ToolResult(content=content, is_error=outcome.error, meta=meta)


class _StrategyTool(Tool):
    """A listed tool; its calls go to the server's call strategy, arguments untouched, so bad
    arguments fail with the strategy's own text."""

    call: SkipJsonSchema[Any] = Field(exclude=True)

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        return rendered(await self.call(self.name, arguments))

    def get_meta(self) -> dict[str, Any] | None:  # type: ignore[override]
        """No `_meta` in the listing: FastMCP's own (`{"fastmcp": {"tags": []}}`) tells a
        client nothing, and some clients echo a tool's `_meta` into every call of it."""
        return dict(self.meta) if self.meta else None


class _UnlistedToStrategy(Middleware):
    """A call of a tool the server does not list goes to the call strategy too."""

    def __init__(self, call: CallStrategy) -> None:
        self.call = call

    async def on_call_tool(self, context: MiddlewareContext, call_next) -> ToolResult:
        try:
            return await call_next(context)
        except NotFoundError:
            message = context.message
            return rendered(await self.call(message.name, message.arguments or {}))


class _InstructionsPerRequest(Middleware):
    """Instructions read for the request, in the answer to the legacy `initialize` and to the
    sessionless protocol's `server/discover`."""

    def __init__(self, read: Callable[[], str]) -> None:
        self.read = read

    async def on_initialize(self, context: MiddlewareContext, call_next) -> Any:
        result = await call_next(context)
        if result is None:
            return None
        return result.model_copy(update={"instructions": self.read()})

    async def on_discover(self, context: MiddlewareContext, call_next) -> Any:
        result = await call_next(context)
        if isinstance(result, mcp_types.DiscoverResult):
            return result.model_copy(update={"instructions": self.read()})
        if isinstance(result, dict) and "serverInfo" in result:
            return {**result, "instructions": self.read()}
        return result


def _resource(text: McpText) -> TextResource | FunctionResource:
    if callable(text.text):
        return FunctionResource.from_function(
            text.text, uri=text.uri, name=text.name, title=text.title, mime_type="text/markdown"
        )
    return TextResource(
        uri=text.uri, name=text.name, title=text.title, text=text.text, mime_type="text/markdown"
    )


def assemble_mcp(
    name: str,
    tools: Sequence[ListedTool],
    call: CallStrategy,
    *,
    instructions: Text | None = None,
    texts: Sequence[McpText] = (),
    version: str | None = None,
) -> FastMCP:
    """A FastMCP server listing `tools` in order, answering every call with `call`, serving
    `texts` as resources. Schemas are served as given (no dereferencing) and errors in full."""
    per_request = callable(instructions)
    middleware: list[Middleware] = [_UnlistedToStrategy(call)]
    if per_request:
        middleware.append(_InstructionsPerRequest(instructions))  # type: ignore[arg-type]
    server = FastMCP(
        name,
        instructions=None if per_request else instructions,  # type: ignore[arg-type]
        version=version,
        dereference_schemas=False,
        mask_error_details=False,
        middleware=middleware,
    )
    for tool in tools:
        server.add_tool(
            _StrategyTool(
                name=tool.name,
                title=tool.title,
                description=tool.description,
                parameters=tool.input_schema,
                annotations=ToolAnnotations.model_validate(tool.hints),
                call=call,
            )
        )
    for text in texts:
        server.add_resource(_resource(text))
    # The modern transport checks `Mcp-Param-*` headers against the called tool's schema; give
    # it the schemas directly instead of letting it run a full tools/list on every call.
    compat.serve_input_schemas(server, {tool.name: tool.input_schema for tool in tools})
    return server


def agent_policy(
    domain: Domain, variant: Variant | None, per_request: Callable[[], str] | None = None
) -> Text:
    """The agent's policy: the domain's, or its retrieval config's; when that config's policy
    depends on the task (banking_knowledge's `golden_retrieval`), `per_request` reads the one of
    the episode or simulation a request is for."""
    if variant is not None and variant.policy_per_task:
        if per_request is None:
            raise ValueError(f"retrieval config '{variant.name}' needs each task's own policy")
        return per_request
    return variant.policy(None) if variant is not None else domain.policy()


def policy_text(domain: Domain, text: Text, config: str | None = None) -> McpText:
    """The policy resource, `<benchmark>://<domain>/policy` (`tau2://airline/policy`)."""
    title = f"{domain.name} agent policy" + (f" ({config})" if config else "")
    return McpText(resource_uri(domain, "policy"), "policy", title, text)


def request_scope() -> dict[str, Any]:
    """The ASGI scope of the HTTP request being answered (where a gateway put the episode or
    simulation the request is for)."""
    from fastmcp.server.dependencies import get_http_request

    return get_http_request().scope
