"""Issue 10, item 9: what a create/call/delete cycle leaves behind. An MCP session a client
never closed ends with its episode, so abandoned sessions do not pile up for 30 minutes."""

from __future__ import annotations

from tau_mcp.servers.compat import open_session_ids
from tests.support.data import DEMO_DIR
from tests.support.server import MCP_HEADERS, mcp_initialize, serving

MCP = MCP_HEADERS
INIT = mcp_initialize("soak")


async def test_unclosed_mcp_sessions_end_with_their_episode() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        tau = srv.app.state.tau
        apps = [await tau.mcp_apps.get(("mock", side, None)) for side in ("agent", "user")]
        opened = []
        for n in range(4):
            await http.post("/mock/episodes", json={"episode_id": f"c{n}"})
            for side in ("agent", "user"):
                answer = await http.post(f"/mock/episodes/c{n}/{side}/mcp", json=INIT, headers=MCP)
                assert answer.status_code == 200
                opened.append((n, side, answer.headers["mcp-session-id"]))
        assert sum(len(open_session_ids(app)) for app in apps) == 8
        # A client that closes its own session is forgotten by the episode as well.
        n, side, closed = opened[0]
        closing = {**MCP, "mcp-session-id": closed}
        assert (await http.delete(f"/mock/episodes/c{n}/{side}/mcp", headers=closing)).is_success
        assert sum(len(open_session_ids(app)) for app in apps) == 7
        for n in range(4):
            assert (await http.delete(f"/mock/episodes/c{n}")).status_code == 204
        assert sum(len(open_session_ids(app)) for app in apps) == 0
        # The ended sessions answer 404 (in JSON) from now on.
        n, side, gone = opened[-1]
        late = await http.post(
            "/mock/agent/mcp", json=INIT | {"id": 2}, headers={**MCP, "mcp-session-id": gone}
        )
        assert late.status_code == 404 and late.json()["error"]
