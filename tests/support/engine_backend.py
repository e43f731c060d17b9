"""The backend interface served straight from the engine, with no HTTP or MCP in between.

Used by fast unit tests of orchestration and grading; real runs go through `HttpBackend`. Its
tool sessions are a registered surface, checked by tests/test_tool_listing.py like every other.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.harness.backends import EpisodeOptions, EpisodeRef, Side, ToolInfo, ToolResult
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import EpisodeStore
from tau_mcp.servers.surfaces import ShownTool, View, as_shown, register_surface


async def _shown_by_engine_session(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool]:
    backend = EngineBackend({domain.name: domain})
    ref = await backend.create_episode(domain.name, None, EpisodeOptions(retrieval_config=variant))
    session = await backend.open_session(ref, view)  # type: ignore[arg-type]
    return [as_shown(t.name, t.description, t.input_schema) for t in await session.list_tools()]


#: The engine-backed tool sessions the orchestration and grading unit tests run on.
ENGINE_SESSION = register_surface(
    "engine backend tool session (tests)", ("agent", "user"), _shown_by_engine_session
)


class _EngineSession:
    def __init__(self, store: EpisodeStore, ref: EpisodeRef, side: Side) -> None:
        self._store, self._ref, self._side = store, ref, side

    async def list_tools(self) -> list[ToolInfo]:
        episode = self._store.get(self._ref.domain, self._ref.episode_id)
        listing = ENGINE_SESSION.episode_tools(episode, self._side)
        return [ToolInfo(s.name, s.description, s.input_schema) for s in listing.tools]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        out = self._store.call(self._ref.domain, self._ref.episode_id, self._side, name, arguments)
        return ToolResult(out.text, out.error, out.cost)

    async def close(self) -> None:
        return None


class EngineBackend:
    def __init__(self, domains: dict[str, Domain]) -> None:
        self.store = EpisodeStore(domains)

    async def create_episode(
        self, domain: str, task_id: str | None, options: EpisodeOptions | None = None
    ) -> EpisodeRef:
        options = options or EpisodeOptions()
        loaded = self.store.domain(domain)
        variant = loaded.resolve_variant(options.retrieval_config, options.retrieval_kwargs)
        episode = self.store.create(domain, task_id, variant=variant)
        base = f"/{domain}/episodes/{episode.id}"
        config = variant.name if variant is not None else None
        return EpisodeRef(domain, episode.id, f"{base}/agent/mcp", f"{base}/user/mcp", config)

    async def open_session(self, ref: EpisodeRef, side: Side) -> _EngineSession:
        return _EngineSession(self.store, ref, side)

    async def hashes(self, ref: EpisodeRef) -> dict[str, str | None]:
        return self.store.get(ref.domain, ref.episode_id).hashes()

    async def assertions(self, ref: EpisodeRef, assertions: list[dict]) -> list[dict]:
        return self.store.get(ref.domain, ref.episode_id).check_assertions(assertions)

    async def replay(
        self, ref: EpisodeRef, calls: list[dict], only_mutating: bool
    ) -> list[dict | None]:
        episode = self.store.get(ref.domain, ref.episode_id)
        parsed = [(c["requestor"], c["name"], c.get("arguments") or {}) for c in calls]
        return episode.replay(parsed, only_mutating)

    async def state(self, ref: EpisodeRef) -> dict[str, Any]:
        return self.store.get(ref.domain, ref.episode_id).snapshot()

    async def changed_records(self, ref: EpisodeRef) -> dict[str, Any] | None:
        return self.store.get(ref.domain, ref.episode_id).changed_records()

    async def delete_episode(self, ref: EpisodeRef) -> None:
        self.store.delete(ref.domain, ref.episode_id)

    async def close(self) -> None:
        return None
