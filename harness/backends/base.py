"""What the harness needs from a server: episodes, per-side tool sessions and grading hooks.

The orchestrator and the grader only speak to these protocols, so they run the same way
against the HTTP/MCP server (in-process or remote) and, in unit tests, against the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from tau_mcp.conversation.tools import InfrastructureError, Side, ToolInfo, ToolResult, ToolSession

__all__ = [
    "EpisodeBackend",
    "EpisodeOptions",
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
    # The retrieval config the episode was created with (its agent tools depend on it).
    retrieval_config: str | None = None


@dataclass(frozen=True)
class EpisodeOptions:
    """How an episode is set up beyond its task: the retrieval config (and its kwargs) of a
    domain that has them (banking_knowledge), as the contract's POST body names them, and the
    faults its agent calls meet (a plan's JSON, `FaultPlan.body()`: docs/faults.md)."""

    retrieval_config: str | None = None
    retrieval_kwargs: dict[str, Any] | None = None
    faults: dict[str, Any] | None = None

    def body(self) -> dict[str, Any]:
        """The fields of `POST /{domain}/episodes` (none when unset)."""
        out: dict[str, Any] = {}
        if self.retrieval_config is not None:
            out["retrieval_config"] = self.retrieval_config
        if self.retrieval_kwargs:
            out["retrieval_kwargs"] = self.retrieval_kwargs
        if self.faults:
            out["faults"] = self.faults
        return out


class EpisodeBackend(Protocol):
    async def create_episode(
        self, domain: str, task_id: str | None, options: EpisodeOptions | None = None
    ) -> EpisodeRef: ...

    async def open_session(self, ref: EpisodeRef, side: Side) -> ToolSession: ...

    async def hashes(self, ref: EpisodeRef) -> dict[str, str | None]: ...

    async def assertions(self, ref: EpisodeRef, assertions: list[dict]) -> list[dict]: ...

    async def replay(
        self, ref: EpisodeRef, calls: list[dict], only_mutating: bool
    ) -> list[dict | None]: ...

    async def state(self, ref: EpisodeRef) -> dict[str, Any]: ...

    async def changed_records(self, ref: EpisodeRef) -> dict[str, Any] | None:
        """`Episode.changed_records()` of the episode: what differs from the domain's base,
        record by record (the diagnosis reads this instead of `state`); None when the server
        cannot say (one older than the route), and the caller reads `state` instead."""
        ...

    async def delete_episode(self, ref: EpisodeRef) -> None: ...

    async def close(self) -> None: ...
