"""A short path for the hot MCP requests: sessionless `tools/call` and `tools/list`.

Over HTTP, a tool call through FastMCP and the MCP SDK's streamable-HTTP transport costs about
2 ms of server CPU, while the engine's own work is ~0.01 ms: the rest is request routing,
middleware chains, pydantic models of the JSON-RPC messages and of the result. For the request
an evaluation makes hundreds of times per simulation, and the listing every new client asks for,
this answers straight from the engine with the response FastMCP would send (`tests/
test_fast_calls.py` checks it: byte for byte for calls, the same JSON for the listing). Anything
else (legacy sessions, other methods, unknown tools, headers that do not match the body) is
handed to FastMCP unchanged, so every validation and error of the real transport still applies
there. None of this needs FastMCP imported, so an in-process server whose clients only call and
list tools never loads it (see `tau_mcp.servers.mcp_apps`).
"""

from __future__ import annotations

import os
from typing import Any

from starlette.types import Message, Receive, Scope, Send

from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.toolkit import Side
from tau_mcp.servers.guards import parsed_body
from tau_mcp.servers.limits import json_utf8, json_utf8_floatless
from tau_mcp.servers.mcp_calls import call_on_episode, result_meta
from tau_mcp.servers.mcp_listing import server_name, tools_list_result
from tau_mcp.servers.mcp_protocol import MODERN_VERSION, SERVER_INFO_META, VERSION_META
from tau_mcp.servers.surfaces import Surface
from tau_mcp.servers.version import package_version

DISABLE_ENV = "TAU_MCP_FULL_PATH"  # set to send every request through FastMCP
_MODERN = MODERN_VERSION.encode()


class FastToolCalls:
    """Answers plain modern `tools/call` and `tools/list` requests for one (domain, side)
    endpoint built by `tau_mcp.servers.mcp_tools.build_mcp_server`; a call runs as there
    (`tau_mcp.servers.mcp_calls`)."""

    def __init__(
        self, domain: Domain, side: Side, surface: Surface, variant: str | None = None
    ) -> None:
        """`variant`: the retrieval config whose endpoint this is (its tools are listed and
        called here too), for a domain that has them."""
        tools = domain.spec.agent_tools if side == "agent" else domain.spec.user_tools
        self.domain, self.side, self.surface, self.variant = domain, side, surface, variant
        self.tool_names = set(tools.specs) if tools is not None else set()
        if variant is not None and domain.variants is not None:
            self.tool_names |= set(domain.variants.added_specs(variant))
        # FastMCP reports the version the server was built with: ours.
        self.server_info = {"name": server_name(domain, side), "version": package_version()}
        self._listing: dict[str, Any] | None = None

    @classmethod
    def for_domain(
        cls, domain: Domain, side: Side, surface: Surface, variant: str | None = None
    ) -> FastToolCalls | None:
        """None when switched off (`TAU_MCP_FULL_PATH`): FastMCP then answers everything."""
        if os.environ.get(DISABLE_ENV):
            return None
        return cls(domain, side, surface, variant)

    async def serve(
        self, scope: Scope, receive: Receive, send: Send, episode: Episode
    ) -> Receive | None:
        """Answer the request and return None, or return a `receive` that replays what was read
        so FastMCP can handle the request."""
        plain = self._plain_headers(scope) if scope.get("method") == "POST" else None
        if plain is None:
            return receive
        body, tail = await _read_body(receive)
        if await self.answer(scope, body, send, episode, plain):
            return None
        return _replayer(body, tail, receive)

    async def answer(
        self,
        scope: Scope,
        body: bytes,
        send: Send,
        episode: Episode,
        plain: tuple[bytes, bytes | None] | None = None,
    ) -> bool:
        """Answer a POST whose whole body is `body` (True), or decline it (False: nothing was
        sent, FastMCP's to answer). `plain`: its headers' `_plain_headers`, when read already."""
        plain = plain or self._plain_headers(scope)
        if plain is None:
            return False
        method, name_header = plain
        if method == b"tools/list":
            ident = self._parse_listing(scope, body)
            if ident is None:
                return False
            listing = {"jsonrpc": "2.0", "id": ident, "result": self.listing()}
            await _send_json(send, listing)
            return True
        call = self._parse(scope, body, name_header)
        if call is None:
            return False
        ident, name, arguments = call
        outcome = await call_on_episode(episode, self.side, name, arguments)
        meta: dict[str, Any] = {SERVER_INFO_META: self.server_info}
        if outcome.cost or outcome.fault is not None:
            meta.update(result_meta(outcome) or {})
        result = {
            "jsonrpc": "2.0",
            "id": ident,
            "result": {
                "content": [{"text": outcome.text, "type": "text"}],
                "isError": outcome.error,
                "resultType": "complete",
                "_meta": meta,
            },
        }
        await _send_json(send, result, floats=bool(outcome.cost) or outcome.fault is not None)
        return True

    def listing(self) -> dict[str, Any]:
        if self._listing is None:
            self._listing = tools_list_result(
                self.surface, self.domain, self.side, self.server_info, self.variant
            )
        return self._listing

    def _plain_headers(self, scope: Scope) -> tuple[bytes, bytes | None] | None:
        """(method, `Mcp-Name` header) of a plain modern tools/call or tools/list request,
        else None. (The last of a repeated header counts, as FastMCP reads them.)"""
        method = name = version = content_type = accept = None
        for key, value in scope.get("headers") or ():
            if key.startswith(b"mcp-"):
                if key == b"mcp-method":
                    method = value
                elif key == b"mcp-name":
                    name = value
                elif key == b"mcp-protocol-version":
                    version = value
                elif key.startswith(b"mcp-param-") or key == b"mcp-session-id":
                    return None  # parameter headers to check, or a legacy session: FastMCP's
            elif key == b"content-type":
                content_type = value
            elif key == b"accept":
                accept = value
        plain = (
            version == _MODERN
            and (method == b"tools/call" or method == b"tools/list")
            and content_type is not None
            and content_type.split(b";")[0].strip() == b"application/json"
            and accept is not None
            and b"application/json" in accept
            and b"text/event-stream" in accept
        )
        if not plain:
            return None
        if method == b"tools/call":
            return (method, name) if name is not None else None
        return (method, None) if name is None else None

    def _parse_listing(self, scope: Scope, body: bytes) -> Any:
        """The request id of a plain, unpaged modern tools/list request, else None."""
        request = _plain_request(scope, body, "tools/list")
        if request is None or set(request[1]) != {"_meta"}:
            return None
        return request[0]

    def _parse(
        self, scope: Scope, body: bytes, name_header: bytes | None
    ) -> tuple[Any, str, dict[str, Any]] | None:
        """(id, tool, arguments) of a plain modern tools/call of a tool this side has."""
        request = _plain_request(scope, body, "tools/call")
        if request is None:
            return None
        ident, params = request
        if not set(params) <= {"name", "arguments", "_meta"}:
            return None
        name, arguments = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or name not in self.tool_names:
            return None
        if name_header != name.encode():
            return None
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return None
        return ident, name, arguments


def _plain_request(scope: Scope, body: bytes, method: str) -> tuple[Any, dict[str, Any]] | None:
    """(id, params) of a single JSON-RPC request for `method` in the modern protocol revision
    (its `_meta` names it), else None."""
    try:
        message = parsed_body(scope, body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(message, dict) or set(message) != {"jsonrpc", "id", "method", "params"}:
        return None
    ident, params = message["id"], message["params"]
    if message["jsonrpc"] != "2.0" or message["method"] != method:
        return None
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    if not isinstance(params, dict):
        return None
    meta = params.get("_meta")
    if not isinstance(meta, dict) or meta.get(VERSION_META) != MODERN_VERSION:
        return None
    return ident, params


async def _send_json(send: Send, message: dict[str, Any], floats: bool = True) -> None:
    """A 200 JSON answer laid out as FastMCP's JSON-response mode lays it out (`floats`: the
    message may hold a float, which only `json_utf8` writes as FastMCP does)."""
    payload = json_utf8(message) if floats else json_utf8_floatless(message)
    headers = [
        (b"content-length", str(len(payload)).encode()),
        (b"content-type", b"application/json"),
    ]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


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
