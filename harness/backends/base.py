"""What the harness needs from a server: episodes, per-side tool sessions and grading hooks.

The orchestrator and the grader only speak to these protocols, so they run the same way
against the HTTP/MCP server (in-process or remote) and, in unit tests, against the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from conversation.tools import InfrastructureError, Side, ToolInfo, ToolResult, ToolSession

__all__ = [
    "EpisodeBackend",
    "EpisodeRef",
    "InfrastructureError",
    "Side",
    "ToolInfo",
    "ToolResult",
    "ToolSession",
]


@dataclass(frozen=True)
class EpisodeRef:
    domain: str
    episode_id: str
    agent_mcp: str
    user_mcp: str


class EpisodeBackend(Protocol):
    async def create_episode(self, domain: str, task_id: str | None) -> EpisodeRef: ...

    async def open_session(self, ref: EpisodeRef, side: Side) -> ToolSession: ...

    async def hashes(self, ref: EpisodeRef) -> dict[str, str | None]: ...

    async def assertions(self, ref: EpisodeRef, assertions: list[dict]) -> list[dict]: ...

    async def replay(
        self, ref: EpisodeRef, calls: list[dict], only_mutating: bool
    ) -> list[dict | None]: ...

    async def state(self, ref: EpisodeRef) -> dict[str, Any]: ...

    async def delete_episode(self, ref: EpisodeRef) -> None: ...

    async def close(self) -> None: ...
