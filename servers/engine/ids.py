"""Client-chosen episode ids: they become URL path segments, so only safe ones are accepted."""

from __future__ import annotations

import re

from tau_mcp.servers.engine.errors import EngineError

MAX_EPISODE_ID = 128
# Starts with a letter or digit, so `.`, `..` and dot-files (which clients and proxies normalise
# away, sending writes to another episode) can never be ids.
_EPISODE_ID = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._~-]{{0,{MAX_EPISODE_ID - 1}}}")
ID_RULE = f"1-{MAX_EPISODE_ID} letters, digits or ._~- starting with a letter or digit"


class BadEpisodeId(EngineError):
    status = 400


def is_safe_episode_id(value: object) -> bool:
    return isinstance(value, str) and _EPISODE_ID.fullmatch(value) is not None


def check_episode_id(value: object, what: str = "episode_id") -> str:
    """`value` if it is a safe episode id, else BadEpisodeId naming the rule."""
    if not is_safe_episode_id(value):
        raise BadEpisodeId(f"{what} must be {ID_RULE}")
    return value  # type: ignore[return-value]
