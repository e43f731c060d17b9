"""What the harness needs from a server: episodes, per-side tool sessions and grading hooks.

The orchestrator and the grader only speak to these two protocols, so they run the same way
against the HTTP/MCP server (in-process or remote) and, in unit tests, against the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Side = Literal["agent", "user"]


class InfrastructureError(RuntimeError):
    """The server or a model provider failed; the simulation is retried, never scored."""


@dataclass(frozen=True)
class ToolInfo:
    """A tool as a client sees it: enough to offer it to a model."""

    name: str
    description: str
    input_schema: dict[str, Any] = field(default_factory=dict)

    def openai_schema(self) -> dict[str, Any]:
        params = dict(self.input_schema) or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }


@dataclass(frozen=True)
class ToolResult:
    text: str
    error: bool


@dataclass(frozen=True)
class EpisodeRef:
    domain: str
    episode_id: str
    agent_mcp: str
    user_mcp: str


class ToolSession(Protocol):
    """One side's tools on one episode (an MCP client session in the real backend)."""

    async def list_tools(self) -> list[ToolInfo]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...

    async def close(self) -> None: ...


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
