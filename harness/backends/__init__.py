"""Where episodes live: the in-process server, a remote `tau-server`, or the bare engine."""

from harness.backends.base import (
    EpisodeBackend,
    EpisodeRef,
    InfrastructureError,
    Side,
    ToolInfo,
    ToolResult,
    ToolSession,
)

__all__ = [
    "EpisodeBackend",
    "EpisodeRef",
    "InfrastructureError",
    "Side",
    "ToolInfo",
    "ToolResult",
    "ToolSession",
]
