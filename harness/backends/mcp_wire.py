"""A lean MCP client for the sessionless protocol (2026-07-28): one POST per message.

In that protocol revision a request carries everything the server needs (protocol version,
client info and capabilities in `_meta`, the method and tool name in headers), so a session is
no more than an endpoint path and a request counter: no handshake, no stream, nothing to close.
The harness makes hundreds of tool calls per second; a general-purpose client (transport task,
message streams, pydantic models of every message) costs several times the server's own work
per call, this one a JSON encode and decode.

Servers that do not speak this revision are reached through the MCP SDK client instead (see
`tau_mcp.harness.backends.http`).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tau_mcp.conversation.tools import result_cost, result_fault
from tau_mcp.harness.backends.base import InfrastructureError, ToolInfo, ToolResult
from tau_mcp.harness.backends.exchange import Exchange, Reply
from tau_mcp.servers.mcp_protocol import (
    CAPABILITIES_META,
    CLIENT_INFO_META,
    MODERN_VERSION,
    VERSION_META,
)

_BASE_HEADERS = (
    (b"content-type", b"application/json"),
    (b"accept", b"application/json, text/event-stream"),
    (b"mcp-protocol-version", MODERN_VERSION.encode()),
)


def _client_meta() -> dict[str, Any]:
    from tau_mcp.servers.version import package_version

    return {
        VERSION_META: MODERN_VERSION,
        CLIENT_INFO_META: {"name": "tau-harness", "version": package_version()},
        CAPABILITIES_META: {},
    }


class McpCallError(InfrastructureError):
    """The server answered an MCP request with a JSON-RPC error or an HTTP error status."""


class WireMcpSession:
    """One side's tools on one episode, as a modern sessionless MCP client sees them."""

    def __init__(
        self,
        exchange: Exchange,
        path: str,
        tools: list[ToolInfo] | None = None,
        read_only_tools: set[str] | None = None,
    ) -> None:
        self._exchange = exchange
        self._path = path
        self._tools = tools
        self._read_only_tools = read_only_tools
        self._ids = itertools.count(1)
        self._meta = _client_meta()

    async def request(self, method: str, params: dict[str, Any], name: str | None = None) -> Any:
        """The `result` of one JSON-RPC request; errors raise McpCallError."""
        ident = next(self._ids)
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "method": method,
                "params": {**params, "_meta": self._meta},
            },
            separators=(",", ":"),
        ).encode()
        headers = (*_BASE_HEADERS, (b"mcp-method", method.encode()))
        if name is not None:
            headers = (*headers, (b"mcp-name", name.encode()))
        reply = await self._exchange.send("POST", self._path, body, headers)
        return _result_of(reply, ident, method)

    async def list_tools(self) -> list[ToolInfo]:
        if self._tools is None:
            listed: list[dict[str, Any]] = []
            cursor = None
            while True:
                result = await self.request("tools/list", {"cursor": cursor} if cursor else {})
                listed += result.get("tools") or []
                cursor = result.get("nextCursor")
                if not cursor:
                    break
            if self._read_only_tools is not None:
                note_read_only(self._read_only_tools, listed)
            self._tools = [
                ToolInfo(t["name"], t.get("description") or "", dict(t.get("inputSchema") or {}))
                for t in listed
            ]
        return self._tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        result = await self.request("tools/call", {"name": name, "arguments": arguments}, name)
        blocks = result.get("content") or []
        text = "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        meta = result.get("_meta")
        return ToolResult(text, bool(result.get("isError")), result_cost(meta), result_fault(meta))

    async def close(self) -> None:
        """Nothing to release: the protocol keeps no session on either side."""


async def supports_modern(exchange: Exchange, path: str) -> bool:
    """Whether the MCP endpoint at `path` speaks the sessionless revision (`server/discover`)."""
    probe = WireMcpSession(exchange, path)
    try:
        result = await probe.request("server/discover", {})
    except InfrastructureError:
        return False
    return MODERN_VERSION in (result.get("supportedVersions") or [])


def note_read_only(target: set[str], tools: list[dict[str, Any]]) -> None:
    """Record which listed tools the server marks read-only (safe to re-send after a drop)."""
    for tool in tools:
        if (tool.get("annotations") or {}).get("readOnlyHint") is True:
            target.add(tool["name"])
        else:
            target.discard(tool["name"])


def _result_of(reply: Reply, ident: int, method: str) -> dict[str, Any]:
    if reply.status >= 400:
        raise McpCallError(f"MCP {method} answered {reply.status}: {_error_text(reply.body)}")
    message = _response_message(reply, ident)
    if message is None:
        raise McpCallError(f"MCP {method}: no JSON-RPC response in the answer")
    error = message.get("error")
    if error is not None:
        text = error.get("message") if isinstance(error, dict) else error
        raise McpCallError(f"MCP {method} failed: {text}")
    result = message.get("result")
    if not isinstance(result, dict):
        raise McpCallError(f"MCP {method}: the response has no result object")
    return result


def _response_message(reply: Reply, ident: int) -> dict[str, Any] | None:
    """The JSON-RPC response to request `ident`, from a JSON body or an event stream."""
    try:
        if reply.content_type.startswith("text/event-stream"):
            for line in reply.body.decode().splitlines():
                if line.startswith("data:"):
                    message = json.loads(line[5:])
                    if isinstance(message, dict) and message.get("id") == ident:
                        return message
            return None
        message = json.loads(reply.body)
    except (ValueError, UnicodeDecodeError):
        return None
    return message if isinstance(message, dict) else None


def _error_text(body: bytes) -> str:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body[:300].decode(errors="replace")
    if isinstance(value, dict):
        error = value.get("error")
        if isinstance(error, dict):
            return str(error.get("message", error))
        if error is not None:
            return str(error)
    return body[:300].decode(errors="replace")
