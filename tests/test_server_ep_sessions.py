"""Issue 10, item 8: Eval Protocol sessions never swap or share a live episode silently."""

from __future__ import annotations

import pytest

from tau_mcp.servers import ep
from tests.support.data import DEMO_DIR
from tests.support.server import MCP_HEADERS, mcp_initialize, serving

MCP = MCP_HEADERS


def _init(session_id: str, task_id: str | None) -> dict:
    extra = {"session_id": session_id, "seed": 1, "config": {"domain": "mock", "task_id": task_id}}
    return mcp_initialize("reward-kit", "1.0.0", _extra=extra)


async def _initialize(http, session_id: str, task_id: str | None):
    response = await http.post("/mock/mcp", json=_init(session_id, task_id), headers=MCP)
    transport = response.headers.get("mcp-session-id")
    if response.status_code == 200:
        await http.post(
            "/mock/mcp",
            json={"jsonrpc": "2.0", "method": "notifications/initialized"},
            headers={**MCP, "mcp-session-id": transport},
        )
    return response, transport


async def _create_task(http, transport: str, title: str):
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "create_task", "arguments": {"user_id": "ana", "title": title}},
    }
    return await http.post("/mock/mcp", json=call, headers={**MCP, "mcp-session-id": transport})


async def _titles(http, session_id: str) -> list[str]:
    state = (await http.get(f"/mock/episodes/{session_id}/state")).json()
    return [t["title"] for t in state["agent_db"]["tasks"].values()]


async def test_live_session_is_never_swapped_or_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        first, t1 = await _initialize(http, "s1", "demo_create")
        assert first.status_code == 200 and t1
        assert (await _create_task(http, t1, "mine")).status_code == 200
        # Another task under the same live session: refused, the episode stays.
        other, _ = await _initialize(http, "s1", "demo_complete")
        assert other.status_code == 409
        assert "will not be switched" in other.json()["error"]
        assert "reset_session" in other.json()["error"]
        # A second client on the same task while the first connection is open: refused.
        second, _ = await _initialize(http, "s1", "demo_create")
        assert second.status_code == 409 and "in use" in second.json()["error"]
        assert "mine" in await _titles(http, "s1")
        # EP's reconnect: close the connection, initialize again -> the same episode goes on.
        assert (
            await http.delete("/mock/mcp", headers={**MCP, "mcp-session-id": t1})
        ).status_code < 500
        again, t2 = await _initialize(http, "s1", "demo_create")
        assert again.status_code == 200
        assert (await _create_task(http, t2, "after reconnect")).status_code == 200
        assert {"mine", "after reconnect"} <= set(await _titles(http, "s1"))
        # After reset_session the id may start another task, fresh.
        ended = await http.post("/mock/control/reset_session", headers={"mcp-session-id": "s1"})
        assert ended.status_code == 200
        fresh, _ = await _initialize(http, "s1", "demo_complete")
        assert fresh.status_code == 200
        assert "mine" not in await _titles(http, "s1")


async def test_idle_connection_is_taken_over_and_then_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        _, old = await _initialize(http, "s2", "demo_create")
        monkeypatch.setattr(ep, "TAKEOVER_IDLE_SECONDS", 0.0)
        taken, new = await _initialize(http, "s2", "demo_create")
        assert taken.status_code == 200 and new != old
        # The stale connection's writes are refused, not rerouted to another episode.
        stale = await _create_task(http, old, "stale")
        assert stale.status_code == 409 and "took it over" in stale.json()["error"]
        assert "stale" not in await _titles(http, "s2")
        state = await http.get("/mock/episodes/default/state")
        assert state.status_code == 404 or "stale" not in str(state.json())
        assert (await _create_task(http, new, "fresh")).status_code == 200


async def test_deleted_episode_takes_its_session_along() -> None:
    """Issue 10, item 9: EP sessions do not pile up over a soak, and a connection whose episode
    was deleted is refused rather than rerouted to the default episode."""
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        bridge = srv.app.state.tau.ep
        for n in range(5):
            _, transport = await _initialize(http, f"soak-{n}", "demo_create")
            assert (await http.delete(f"/mock/episodes/soak-{n}")).status_code == 204
        assert not bridge.sessions and not bridge.transports
        late = await _create_task(http, transport, "late")
        assert late.status_code == 409 and "deleted" in late.json()["error"]
        fresh, _ = await _initialize(http, "soak-4", "demo_complete")  # the id starts afresh
        assert fresh.status_code == 200
