"""A short path for the hot MCP request: a sessionless `tools/call` of a tool the side has.

Over HTTP, a tool call through FastMCP and the MCP SDK's streamable-HTTP transport costs about
2 ms of server CPU, while the engine's own work is ~0.01 ms: the rest is request routing,
middleware chains, pydantic models of the JSON-RPC messages and of the result. For the one
request an evaluation makes hundreds of times per simulation, this answers straight from the
engine with the response FastMCP would send (same JSON, byte for byte; `tests/test_fast_calls.py`
checks it). Anything else (legacy sessions, other methods, unknown tools, headers that do not
match the body, a server with extra FastMCP middleware) is handed to FastMCP unchanged, so every
validation and error of the real transport still applies there.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from servers.engine.episode import Episode, Side, ToolOutcome
from servers.engine.errors import EngineError

log = logging.getLogger("tau.server")

MODERN_VERSION = "2026-07-28"
VERSION_META = "io.modelcontextprotocol/protocolVersion"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
DISABLE_ENV = "TAU_MCP_FULL_PATH"  # set to send every request through FastMCP


class FastToolCalls:
    """Answers plain modern `tools/call` requests for one (domain, side) MCP server."""

    def __init__(self, side: Side, tool_names: set[str], server_name: str, version: str) -> None:
        self.side, self.tool_names = side, tool_names
        self.server_info = {"name": server_name, "version": version}

    @classmethod
    def for_server(cls, server: Any, side: Side, tool_names: set[str]) -> FastToolCalls | None:
        """None when the server has middleware beyond the engine's unknown-tool answer: such
        middleware must see every call, so FastMCP handles them all."""
        if os.environ.get(DISABLE_ENV):
            return None
        middleware = getattr(server, "middleware", None)
        if middleware is None or len(middleware) != 1:
            return None
        if type(middleware[0]).__name__ != "UnknownToolsToEngine":
            return None
        import fastmcp

        # The version FastMCP itself reports for this server (ours when it was given one).
        version = getattr(server, "version", None) or fastmcp.__version__
        return cls(side, tool_names, server.name, str(version))

    async def serve(
        self, scope: Scope, receive: Receive, send: Send, episode: Episode
    ) -> Receive | None:
        """Answer the request and return None, or return a `receive` that replays what was read
        so FastMCP can handle the request."""
        name_header = self._plain_headers(scope) if scope.get("method") == "POST" else None
        if name_header is None:
            return receive
        body, tail = await _read_body(receive)
        replay = _replayer(body, tail, receive)
        call = self._parse(body, name_header)
        if call is None:
            return replay
        ident, name, arguments = call
        try:
            with episode.lock:
                outcome = episode.call(self.side, name, arguments)
        except EngineError as exc:
            outcome = ToolOutcome(f"Error: {exc}", True)
        except Exception as exc:  # noqa: BLE001 - a client must get a result, never a crash
            log.exception("tool %s failed outside the engine", name)
            outcome = ToolOutcome(f"Error: internal server error ({type(exc).__name__})", True)
        result = {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {
                "content": [{"text": outcome.text, "type": "text"}],
                "isError": outcome.error,
                "resultType": "complete",
                "_meta": {SERVER_INFO_META: self.server_info},
            },
        }
        payload = json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()
        headers = [
            (b"content-length", str(len(payload)).encode()),
            (b"content-type", b"application/json"),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
        return None

    def _plain_headers(self, scope: Scope) -> bytes | None:
        """The `Mcp-Name` header of a plain modern tools/call request, else None."""
        seen: dict[bytes, bytes] = {}
        for key, value in scope.get("headers") or ():
            if key.startswith(b"mcp-param-") or key == b"mcp-session-id":
                return None  # parameter headers to check, or a legacy session: FastMCP's job
            seen[key] = value
        accept = seen.get(b"accept", b"")
        plain = (
            seen.get(b"mcp-protocol-version") == MODERN_VERSION.encode()
            and seen.get(b"mcp-method") == b"tools/call"
            and seen.get(b"content-type", b"").split(b";")[0].strip() == b"application/json"
            and b"application/json" in accept
            and b"text/event-stream" in accept
        )
        return seen.get(b"mcp-name") if plain else None

    def _parse(self, body: bytes, name_header: bytes) -> tuple[Any, str, dict[str, Any]] | None:
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
            return None
        ident, params = message["id"], message["params"]
        if message["jsonrpc"] != "2.0" or message["method"] != "tools/call":
            return None
        if isinstance(ident, bool) or not isinstance(ident, int | str):
            return None
        if not isinstance(params, dict) or not set(params) <= {"name", "arguments", "_meta"}:
            return None
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if not isinstance(name, str) or name not in self.tool_names:
            return None
        if name_header != name.encode():
            return None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict) or not isinstance(meta, dict):
            return None
        if meta.get(VERSION_META) != MODERN_VERSION:
            return None
        return ident, name, arguments


async def _read_body(receive: Receive) -> tuple[bytes, Message | None]:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replayer(body: bytes, tail: Message | None, receive: Receive) -> Receive:
    pending: list[Message] = [{"type": "http.request", "body": body, "more_body": False}]
    if tail is not None:
        pending.append(tail)

    async def replay() -> Message:
        if pending:
            return pending.pop(0)
        return await receive()

    return replay
