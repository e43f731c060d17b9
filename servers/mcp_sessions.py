"""MCP sessions opened on an episode's endpoints end when the episode is deleted.

A client on the `initialize` handshake that never closes its session (no HTTP DELETE: it
crashed, or it simply doesn't) leaves the MCP library holding that session for its idle
timeout (30 minutes), about 45 kB each: a soak of such clients grew the server by ~45 MB per
1,000 episodes. The gateway notes the `Mcp-Session-Id` each episode endpoint hands out, and
deleting the episode terminates those sessions at once.
"""

from __future__ import annotations

import logging

from starlette.types import Message, Send

from tau_mcp.servers import compat
from tau_mcp.servers.engine.episode import Episode

log = logging.getLogger("tau.server")
SESSION_HEADER = b"mcp-session-id"
_ATTR = "_tau_mcp_sessions"


def _sessions(episode: Episode) -> dict[str, object]:
    found = episode.__dict__.get(_ATTR)
    if found is None:
        found = episode.__dict__[_ATTR] = {}
    return found


def track(episode: Episode, mcp_app: object, method: str, transport_id: str | None, send: Send):
    """`send`, noting the session id an `initialize` answer hands out on this episode's endpoint
    (and forgetting a session the client closes itself)."""
    if method == "DELETE" and transport_id:
        _sessions(episode).pop(transport_id, None)
        return send
    if method != "POST" or transport_id:
        return send

    async def noting_send(message: Message) -> None:
        if message["type"] == "http.response.start" and message.get("status", 500) < 400:
            for name, value in message.get("headers", []):
                if name.lower() == SESSION_HEADER:
                    _sessions(episode)[value.decode("latin-1")] = mcp_app
        await send(message)

    return noting_send


async def end_sessions(episode: Episode) -> int:
    """Terminate the MCP sessions still open on the episode's endpoints; how many were."""
    ended = 0
    for transport_id, mcp_app in list(_sessions(episode).items()):
        try:
            ended += await compat.end_session(mcp_app, transport_id)
        except Exception:  # noqa: BLE001 - a session that fails to close must not fail the DELETE
            log.warning("could not end MCP session %s", transport_id, exc_info=True)
    _sessions(episode).clear()
    return ended
