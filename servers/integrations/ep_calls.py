"""The Eval Protocol path's call log: a FastMCP middleware that notes every agent tool call.

Apart from `tau_mcp.servers.integrations.ep_grade` (which reads the log) because it needs FastMCP, which
the server imports only when it builds an MCP app.
"""

from __future__ import annotations

from fastmcp.server.middleware import Middleware, MiddlewareContext

from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.integrations.ep_grade import note_call


class RecordToolCalls(Middleware):
    """Keeps (name, arguments) of every tool call made on an episode through this MCP server,
    failed ones included (the reference's action check counts every call the agent made)."""

    def __init__(self, resolve) -> None:
        self.resolve = resolve

    async def on_call_tool(self, context: MiddlewareContext, call_next):
        message = context.message
        try:
            episode = self.resolve()
        except EngineError:
            episode = None
        if episode is not None:
            with episode.lock:
                note_call(episode, message.name, dict(message.arguments or {}))
        return await call_next(context)


def record_tool_calls(server, resolve) -> None:
    """Install the call log on a FastMCP server built for the EP path."""
    server.add_middleware(RecordToolCalls(resolve))
