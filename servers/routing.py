"""Which episode a request belongs to: the one rule every episode-affine router of tau-server
follows (`tau-server serve --workers N`'s front process, `servers/router.py`, and the load
balancer configuration of `servers/lb_config.py`).

A request belongs to the episode its path names (`/{domain}/episodes/{id}/...`), to the
`default` episode (`/{domain}/{side}/mcp`), or, on the Eval Protocol path and its control
routes, to the episode its `mcp-session-id` header names (the EP session id is the episode id;
a transport id the server handed out is mapped back by whoever saw it handed out). Two requests
name their episode only in the body: creating one with a client-chosen `episode_id`, and EP's
`initialize` with `clientInfo._extra.session_id`. Everything else (`/health`, task lists,
unnamed creates) belongs to no episode and may go anywhere.

An episode's owner among `count` processes is `crc32(id) % count`: stable across processes
and restarts, so a replacement process owns exactly what the one it replaces owned, and a
process creating an episode without a client-chosen id draws ids until it owns one.
"""

from __future__ import annotations

import json
import uuid
import zlib
from collections.abc import Callable
from typing import Any

DEFAULT_EPISODE = "default"
SESSION_HEADER = b"mcp-session-id"

# What the body must tell before a request can be routed.
CREATE = "create"  # POST /{domain}/episodes: the optional "episode_id"
EP_INITIALIZE = "ep-initialize"  # POST /{domain}/mcp without a session header


def request_key(method: str, target: str, session: str | None) -> tuple[str | None, str | None]:
    """(episode id or None, what the body must tell: None, CREATE or EP_INITIALIZE) for a
    request line's method and target and its `mcp-session-id` header."""
    path = target.split("?", 1)[0]
    parts = path.strip("/").split("/")
    count = len(parts)
    if count >= 3 and parts[1] == "episodes":
        return parts[2], None
    if count == 2 and parts[1] == "episodes":
        return None, CREATE if method == "POST" else None
    if count == 3 and parts[2] == "mcp":  # /{domain}/{side}/mcp
        return DEFAULT_EPISODE, None
    if count == 2 and parts[1] == "mcp":  # /{domain}/mcp, Eval Protocol
        if session:
            return session, None
        return DEFAULT_EPISODE, EP_INITIALIZE if method == "POST" else None
    if count == 3 and parts[1] == "control":
        return session or None, None
    return None, None


def body_key(kind: str, body: bytes) -> str | None:
    """The episode a CREATE or EP_INITIALIZE body names (None: none, or not readable; the
    worker it then reaches answers a malformed body itself)."""
    try:
        message: Any = json.loads(body) if body else None
    except (ValueError, RecursionError):
        return None
    if kind == CREATE:
        value = message.get("episode_id") if isinstance(message, dict) else None
        return value if isinstance(value, str) else None
    if isinstance(message, list):  # a JSON-RPC batch
        message = next((m for m in message if _is_initialize(m)), None)
    if not _is_initialize(message):
        return DEFAULT_EPISODE
    params = message.get("params")
    client = params.get("clientInfo") if isinstance(params, dict) else None
    extra = client.get("_extra") if isinstance(client, dict) else None
    session = extra.get("session_id") if isinstance(extra, dict) else None
    return session if isinstance(session, str) and session else DEFAULT_EPISODE


def _is_initialize(message: Any) -> bool:
    return isinstance(message, dict) and message.get("method") == "initialize"


def owner(key: str, count: int) -> int:
    """The index of the process (of `count`) that holds episode `key`."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % count


def id_maker(index: int, count: int) -> Callable[[], str]:
    """New episode ids that process `index` of `count` owns (random, as uuid4 hex)."""

    def make() -> str:
        while True:
            candidate = uuid.uuid4().hex
            if owner(candidate, count) == index:
                return candidate

    return make
