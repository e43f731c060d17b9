"""Messages between the driver and its worker processes: JSON objects, length-prefixed.

A record can hold a long conversation, so frames carry their size (4 bytes, big-endian) instead
of ending at a newline; both ends read them with asyncio streams, on the event loop's selector.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

HEADER = 4
MAX_FRAME = 1 << 30


def encode(message: dict[str, Any]) -> bytes:
    """One frame; values JSON cannot hold are written as text, as results files write them."""
    body = json.dumps(message, default=str, separators=(",", ":")).encode("utf-8")
    return len(body).to_bytes(HEADER, "big") + body


async def read_frame(reader: asyncio.StreamReader) -> dict[str, Any] | None:
    """The next message, or None once the other end has gone (closed, killed, reset)."""
    try:
        size = int.from_bytes(await reader.readexactly(HEADER), "big")
        if size > MAX_FRAME:
            return None
        return json.loads(await reader.readexactly(size))
    except (asyncio.IncompleteReadError, ConnectionError, OSError):
        return None
