"""Retrying only what is safe to retry when a tau-server connection fails without an answer.

A request that failed to connect was never sent: any request may be retried. A request that was
sent and got no response at all (`Server disconnected without sending a response`, a reset)
may or may not have been applied, so it is retried only when running it twice changes nothing:
GET/HEAD/OPTIONS/DELETE, POSTs the caller marks idempotent, and MCP messages that only read
(`tools/list`, `ping`, ..., and `tools/call` of a tool the server annotates `readOnlyHint`).
A write tool call that may have been applied is never re-sent; it fails as infrastructure.

The policy is the one both clients apply: the harness's own exchange
(`tau_mcp.harness.backends.exchange.HttpExchange`) and the httpx2 transport handed to the MCP
SDK's client for servers older than the sessionless protocol revision
(`tau_mcp.harness.backends.sdk_transport`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

IDEMPOTENT = "tau.idempotent"  # request extension: this POST may safely be sent twice
# Pooled idle connections are dropped after this many seconds: below uvicorn's default
# keep-alive (5 s) so that even a server with that default never closes one we reuse.
KEEPALIVE_EXPIRY = 4.0
RETRIES = 3
_BACKOFF = (0.05, 0.25, 1.0)
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
_READ_ONLY_RPC = frozenset(
    {
        "initialize",
        "notifications/initialized",
        "ping",
        "tools/list",
        "resources/list",
        "resources/read",
        "resources/templates/list",
        "prompts/list",
        "prompts/get",
    }
)


def backoff(attempt: int) -> float:
    """Seconds to wait before re-sending after `attempt` failed tries (0-based)."""
    return _BACKOFF[min(attempt, len(_BACKOFF) - 1)]


def safe_to_resend(
    method: str, content: bytes | None, idempotent: bool, read_only_tools: set[str]
) -> bool:
    """Whether a request that may have reached the server can be sent again harmlessly."""
    if method in _SAFE_METHODS or idempotent:
        return True
    if method != "POST":
        return False
    messages = _rpc_messages(content)
    if not messages:
        return False
    for message in messages:
        rpc = message.get("method")
        if rpc in _READ_ONLY_RPC:
            continue
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if rpc == "tools/call" and params.get("name") in read_only_tools:
            continue
        return False
    return True


def _rpc_messages(content: bytes | None) -> list[dict] | None:
    try:
        value = json.loads(content or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    messages = value if isinstance(value, list) else [value]
    return messages if all(isinstance(m, dict) for m in messages) else None


def note_read_only_tools(target: set[str], tools: Iterable) -> None:
    """Record which listed MCP tools the server marks read-only (safe to re-send)."""
    for tool in tools:
        annotations = getattr(tool, "annotations", None)
        read_only = getattr(annotations, "read_only_hint", None)
        if read_only is None:
            read_only = getattr(annotations, "readOnlyHint", None)
        if read_only is True:
            target.add(tool.name)
        else:
            target.discard(tool.name)
