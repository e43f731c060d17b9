"""The τ-bench domains served by tau-server: a sample of the original's recorded episodes
through the HTTP routes and the agent's MCP endpoint, in both protocol generations; the state
route returns the original's data, from which the original's hash is computed."""

from __future__ import annotations

import json

import pytest

from tests.support import taubench as tb

pytestmark = pytest.mark.needs_data("taubench")

MODES = ("legacy", "2026-07-28")
INITIAL_HASH = {
    "tau-bench-retail": "5a4b2cb59f4d12dea7e4adff24a7f8fada510ead49372ea4a729a82bbb5f49b5",
    "tau-bench-airline": "4587e6b48ad2b2c4f3e1fecb40aabec7bb2286513273b8f8cec3f5865222f290",
}


def _sample() -> list[tuple[str, str, list[dict]]]:
    """(domain, task id, steps): every 25th gold task of each split and every 10th fuzz
    episode that does not end on the terminate tool."""
    cases = []
    for fixture in tb.GOLD_FILES:
        recorded = tb.gold(fixture)
        for record in recorded["tasks"][::25]:
            task_id = f"{recorded['split']}_{record['task_index']}"
            steps = [s for s in record["steps"] if not s["done"]]
            cases.append((tb.DOMAIN_OF[recorded["domain"]], task_id, steps))
    for episode in tb.fuzz()["episodes"][::10]:
        if "final_respond" in episode:
            task_id = f"{episode['split']}_{episode['task_index']}"
            cases.append((tb.DOMAIN_OF[episode["domain"]], task_id, episode["steps"]))
    return cases


@pytest.mark.parametrize("mode", MODES)
async def test_recorded_episodes_through_mcp_and_the_state_route(mode: str) -> None:
    problems = []
    async with tb.serving() as srv, srv.http() as http:
        for case, (domain, task_id, steps) in enumerate(_sample()):
            created = await http.post(f"/{domain}/episodes", json={"task_id": task_id})
            assert created.status_code == 201, created.text
            episode = created.json()
            async with srv.mcp(episode["agent_mcp"], mode) as agent:
                for index, step in enumerate(steps):
                    action = step["action"]
                    result = await agent.call_tool(
                        action["name"], action["kwargs"], raise_on_error=False
                    )
                    text = result.content[0].text if result.content else ""
                    if text != step["observation"]:
                        problems.append(f"{task_id} step {index}: {text[:200]!r}")
                        break
            base = f"/{domain}/episodes/{episode['episode_id']}"
            want = next(
                (s["data_hash_after"] for s in reversed(steps) if s["data_hash_after"]),
                INITIAL_HASH[domain],
            )
            hashes = (await http.get(f"{base}/hash")).json()
            if hashes != {"agent_db": want, "user_db": None}:
                problems.append(f"{task_id}: /hash {hashes} != {want}")
            if case % 8 == 0:  # the whole state is megabytes: a few suffice
                state = (await http.get(f"{base}/state")).json()
                if state["user_db"] is not None or tb.original_hash(state["agent_db"]) != want:
                    problems.append(f"{task_id}: the state's original hash differs")
            await http.delete(base)
    assert not problems, "\n".join(problems[:10])


async def test_agent_endpoint_lists_the_original_tools_and_serves_the_policy() -> None:
    async with tb.serving() as srv, srv.http() as http:
        for domain, folder in (("tau-bench-retail", "retail"), ("tau-bench-airline", "airline")):
            listed = json.loads(
                (tb.TAUBENCH_DIR / "taubench/domains" / folder / "tools.json").read_text()
            )
            created = (await http.post(f"/{domain}/episodes", json={"task_id": "test_0"})).json()
            async with srv.mcp(created["agent_mcp"]) as agent:
                tools = await agent.list_tools()
                assert [t.name for t in tools] == [t["function"]["name"] for t in listed]
                for tool, original in zip(tools, listed, strict=True):
                    assert tool.description == original["function"]["description"]
                    assert tool.input_schema == original["function"]["parameters"]
            async with srv.mcp(created["user_mcp"]) as user:
                assert await user.list_tools() == []
            tasks = (await http.get(f"/{domain}/tasks")).json()["tasks"]  # the test split
            assert tasks[0] == {"id": "test_0"} and len(tasks) == (
                115 if folder == "retail" else 50
            )
            if folder == "retail":
                dev = (await http.get(f"/{domain}/tasks?split=dev")).json()["tasks"]
                assert [t["id"] for t in dev] == [f"dev_{i}" for i in range(20)]


async def test_the_endpoints_name_tau_bench_not_tau2() -> None:
    """The agent endpoint's instructions and policy resource name the original τ-bench; the
    user side offers tau2's user-simulator guidelines to no one (the original has its own)."""
    async with tb.serving() as srv, srv.http() as http:
        created = (
            await http.post("/tau-bench-airline/episodes", json={"task_id": "test_0"})
        ).json()
        async with srv.mcp(created["agent_mcp"], "legacy") as agent:
            started = agent.initialize_result
            resources = await agent.list_resources()
        assert started.server_info.name == "tau-bench-airline-agent"
        assert "tau2" not in started.instructions and "τ-bench" in started.instructions
        assert [str(r.uri) for r in resources] == ["tau-bench://tau-bench-airline/policy"]
        async with srv.mcp(created["user_mcp"], "legacy") as user:
            started = user.initialize_result
            assert await user.list_resources() == []
        assert "tau2" not in started.instructions
