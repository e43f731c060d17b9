"""banking_knowledge over HTTP and MCP: an episode gets its retrieval config from the request
(contract: `retrieval_config`, `retrieval_kwargs`), its agent endpoint lists and serves that
config's tools, and a config that cannot run here is a 400 with one sentence."""

from __future__ import annotations

import json

import pytest

from tests.support.data import CONFORMANCE_DIR
from tests.support.server import mcp_initialize, serving

pytestmark = pytest.mark.needs_data("banking_knowledge", "reference_texts")
EPISODES = "/banking_knowledge/episodes"


async def _error(http, body: dict, domain: str = "banking_knowledge") -> str:
    reply = await http.post(f"/{domain}/episodes", json=body)
    assert reply.status_code == 400, reply.text
    message = reply.json()["error"]
    assert "\n" not in message
    return message


async def test_a_shell_config_without_a_sandbox_is_400_in_one_sentence(monkeypatch) -> None:
    from tau_mcp.servers.knowledge.sandbox import sandbox_problem

    monkeypatch.setenv("TAU_MCP_BWRAP", "/nonexistent/bwrap")
    sandbox_problem.cache_clear()
    try:
        async with serving(["banking_knowledge"]) as srv, srv.http() as http:
            shell = await _error(http, {"retrieval_config": "terminal_use"})
            assert "a shell sandbox (the shell sandbox needs bubblewrap (bwrap)" in shell
            assert "apt-get install bubblewrap" in shell and "bm25_grep" in shell
    finally:
        monkeypatch.delenv("TAU_MCP_BWRAP")
        sandbox_problem.cache_clear()


async def test_configs_that_cannot_run_and_bad_options_are_400_in_one_sentence() -> None:
    async with serving(["banking_knowledge", "mock"]) as srv, srv.http() as http:
        default = await _error(http, {"task_id": "task_001"})
        assert "'alltools' (the default) cannot run here" in default
        assert "--retrieval-config bm25_grep" in default
        assert "unknown retrieval config 'bm26'" in await _error(http, {"retrieval_config": "bm26"})
        assert "'top_k' must be an integer" in await _error(
            http, {"retrieval_config": "bm25", "retrieval_kwargs": {"top_k": "5"}}
        )
        assert "'retrieval_kwargs' must be an object" in await _error(
            http, {"retrieval_config": "bm25", "retrieval_kwargs": [1]}
        )
        assert "has no retrieval configs" in await _error(
            http, {"retrieval_config": "bm25"}, domain="mock"
        )
        # The default episode's endpoints say the same.
        reply = await http.post("/banking_knowledge/agent/mcp", json=mcp_initialize())
        assert reply.status_code == 400 and "cannot run here" in reply.json()["error"]


@pytest.mark.needs_data("conformance")
async def test_an_episode_serves_its_configs_tools_over_mcp() -> None:
    cases = json.loads((CONFORMANCE_DIR / "retrieval" / "queries.json").read_text())
    reference = json.loads((CONFORMANCE_DIR / "retrieval" / "reference.json").read_text())
    case = next(c for c in cases if c["tool"] == "grep" and c["retrieval_kwargs"])
    async with serving(["banking_knowledge"]) as srv, srv.http() as http:
        created = await http.post(
            EPISODES,
            json={
                "task_id": "task_001",
                "retrieval_config": case["config"],
                "retrieval_kwargs": case["retrieval_kwargs"],
            },
        )
        assert created.status_code == 201, created.text
        async with srv.mcp(created.json()["agent_mcp"]) as client:
            result = await client.call_tool("grep", case["arguments"], raise_on_error=False)
            assert result.content[0].text == reference[case["id"]]["output"]
            missing = await client.call_tool("KB_search", {"query": "fee"}, raise_on_error=False)
            assert missing.is_error
            assert missing.content[0].text == "Error: Tool 'KB_search' not found."
        state = (await http.get(f"{EPISODES}/{created.json()['episode_id']}/state")).json()
        assert state["user_db"] is None


async def test_the_servers_default_config_and_eval_protocol_sessions() -> None:
    async with serving(["banking_knowledge"], retrieval_config="bm25") as srv, srv.http() as http:
        created = await http.post(EPISODES, json={"task_id": "task_001"})
        assert created.status_code == 201, created.text
        async with srv.mcp("/banking_knowledge/agent/mcp") as client:
            names = [t.name for t in await client.list_tools()]
        assert names[0] == "KB_search" and "grep" not in names
        # An Eval Protocol session names its own config in the row's config.
        extra = {
            "session_id": "ep-grep",
            "config": {"task_id": "task_001", "retrieval_config": "grep_only"},
        }
        reply = await http.post(
            "/banking_knowledge/mcp",
            json=mcp_initialize(_extra=extra),
            headers={"accept": "application/json, text/event-stream"},
        )
        assert reply.status_code == 200, reply.text
        session = reply.headers["mcp-session-id"]
        listed = await http.post(
            "/banking_knowledge/mcp",
            json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            headers={
                "accept": "application/json, text/event-stream",
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-06-18",
            },
        )
        names = [t["name"] for t in listed.json()["result"]["tools"]]
        assert names[0] == "grep" and "KB_search" not in names
