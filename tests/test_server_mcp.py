"""MCP endpoints through fastmcp's own client, in both protocol generations, in-process."""

from __future__ import annotations

import json
import random

import anyio
import pytest

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.episode import Episode, EpisodeStore
from tests.support import conformance as conf
from tests.support.data import DEMO_DIR
from tests.support.server import domain_ready, serving

MODES = ("legacy", "2026-07-28")


@pytest.mark.parametrize("mode", MODES)
async def test_episode_endpoints_expose_exactly_their_side(mode: str) -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        await http.post("/mock/episodes", json={"task_id": "demo_notice", "episode_id": "e"})
        async with srv.mcp("/mock/episodes/e/agent/mcp", mode) as agent:
            assert agent.protocol_version == (
                "2026-07-28" if mode != "legacy" else agent.protocol_version
            )
            tools = {t.name: t for t in await agent.list_tools()}
            assert set(tools) == {
                "create_task",
                "get_users",
                "update_task_status",
                "transfer_to_human_agents",
            }
            assert tools["get_users"].annotations.read_only_hint is True
            assert tools["create_task"].annotations.read_only_hint is False
            assert tools["create_task"].annotations.destructive_hint is True
            assert tools["create_task"].input_schema["required"] == ["user_id", "title"]

            ok = await agent.call_tool(
                "update_task_status",
                {"task_id": "task_1", "status": "completed"},
                raise_on_error=False,
            )
            assert not ok.is_error and json.loads(ok.content[0].text)["status"] == "completed"
            bad = await agent.call_tool(
                "create_task", {"user_id": "nobody", "title": "x"}, raise_on_error=False
            )
            assert bad.is_error and bad.content[0].text == "Error: User nobody not found"
            # user tools and helper functions are out of the agent's reach
            for name in ("check_notifications", "assert_number_of_tasks"):
                hidden = await agent.call_tool(name, {}, raise_on_error=False)
                assert (
                    hidden.is_error and hidden.content[0].text == f"Error: Tool '{name}' not found."
                )
            policy = await agent.read_resource("tau2://mock/policy")
            assert policy[0].text == load_domains(["mock"], DEMO_DIR)["mock"].policy()

        async with srv.mcp("/mock/episodes/e/user/mcp", mode) as user:
            assert {t.name for t in await user.list_tools()} == {
                "check_notifications",
                "dismiss_notification",
            }
            inbox = await user.call_tool("check_notifications", {}, raise_on_error=False)
            assert not inbox.is_error
            assert [r.uri for r in await user.list_resources()] == ["tau2://mock/user-guidelines"]

        state = (await http.get("/mock/episodes/e/state")).json()
        assert state["agent_db"]["tasks"]["task_1"]["status"] == "completed"


async def test_default_episode() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        async with srv.mcp("/mock/agent/mcp") as agent:
            created = await agent.call_tool(
                "create_task", {"user_id": "ana", "title": "via default"}, raise_on_error=False
            )
            assert not created.is_error
        state = (await http.get("/mock/episodes/default/state")).json()
        assert any(t["title"] == "via default" for t in state["agent_db"]["tasks"].values())


@pytest.mark.needs_data("airline")
async def test_airline_user_side_has_no_tools() -> None:
    async with serving(["airline"]) as srv:
        async with srv.mcp("/airline/user/mcp") as user:
            assert await user.list_tools() == []


async def test_unexpected_exception_becomes_error_result(monkeypatch) -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        await http.post("/mock/episodes", json={"episode_id": "boom"})
        original = Episode.call

        def explode(self, side, name, arguments=None):
            if name == "get_users":
                raise RuntimeError("kaboom")
            return original(self, side, name, arguments)

        monkeypatch.setattr(Episode, "call", explode)
        async with srv.mcp("/mock/episodes/boom/agent/mcp") as agent:
            failed = await agent.call_tool("get_users", {}, raise_on_error=False)
            assert failed.is_error and failed.content[0].text.startswith("Error: ")
            after = await agent.call_tool(
                "create_task", {"user_id": "ana", "title": "still fine"}, raise_on_error=False
            )
            assert not after.is_error


def _random_calls(rng: random.Random, count: int) -> list[tuple[str, dict]]:
    calls = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.45:
            calls.append(
                (
                    "create_task",
                    {"user_id": rng.choice(["ana", "user_x"]), "title": f"t{rng.randint(0, 9)}"},
                )
            )
        elif kind < 0.8:
            calls.append(
                (
                    "update_task_status",
                    {
                        "task_id": f"task_{rng.randint(1, 4)}",
                        "status": rng.choice(["pending", "completed", "bad"]),
                    },
                )
            )
        else:
            calls.append(("get_users", {}))
    return calls


async def test_200_concurrent_episodes_match_sequential_replay() -> None:
    rng = random.Random(7)
    plans = {f"c{i}": _random_calls(rng, rng.randint(3, 8)) for i in range(200)}
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        for episode_id in plans:
            await http.post("/mock/episodes", json={"episode_id": episode_id})

        outputs: dict[str, list[tuple[str, bool]]] = {}

        async def drive(episode_id: str, mode: str) -> None:
            async with srv.mcp(f"/mock/episodes/{episode_id}/agent/mcp", mode) as client:
                got = []
                for name, args in plans[episode_id]:
                    result = await client.call_tool(name, args, raise_on_error=False)
                    got.append((result.content[0].text, result.is_error))
                    await anyio.sleep(0)
                outputs[episode_id] = got

        async with anyio.create_task_group() as tg:
            for index, episode_id in enumerate(plans):
                tg.start_soon(drive, episode_id, MODES[index % 2])
        served = {e: (await http.get(f"/mock/episodes/{e}/hash")).json() for e in plans}

    store = EpisodeStore(load_domains(["mock"], DEMO_DIR))
    for episode_id, calls in plans.items():
        episode = store.create("mock", None, episode_id)
        expected = [(o.text, o.error) for o in (episode.call("agent", n, a) for n, a in calls)]
        assert outputs[episode_id] == expected, episode_id
        assert served[episode_id] == episode.hashes(), episode_id


@pytest.mark.needs_data("conformance")
@pytest.mark.parametrize("domain", ["mock", "airline", "retail", "telecom", "banking_knowledge"])
async def test_gold_replay_through_mcp(domain: str) -> None:
    reason = domain_ready(domain)
    if reason:
        pytest.skip(reason)
    gold = conf.gold(domain)
    failures = []
    # banking_knowledge's episodes need a retrieval config that runs here (the default,
    # alltools, needs a key and a sandbox); the gold steps use no retrieval tool.
    async with serving([domain], retrieval_config="no_knowledge") as srv, srv.http() as http:
        for task_id, record in gold.items():
            created = (await http.post(f"/{domain}/episodes", json={"task_id": task_id})).json()
            async with srv.mcp(created["agent_mcp"]) as agent, srv.mcp(created["user_mcp"]) as user:
                texts = []
                for step in record["steps"]:
                    client = user if conf.side_of(step["requestor"]) == "user" else agent
                    result = await client.call_tool(
                        step["name"], step["arguments"], raise_on_error=False
                    )
                    texts.append(
                        (result.content[0].text if result.content else "", result.is_error)
                    )
            replayed = iter(texts)
            steps = [{k: s[k] for k in ("requestor", "name", "arguments")} for s in record["steps"]]
            mismatch = conf.compare_steps(
                task_id, lambda side, name, args, it=replayed: next(it), steps, record["steps"]
            )
            conf.compare_hashes(
                mismatch,
                (await http.get(f"/{domain}/episodes/{created['episode_id']}/hash")).json(),
                record["final_sha"],
            )
            if mismatch:
                failures.append(mismatch)
    assert not failures, "\n".join(f"{m.case}: {p}" for m in failures[:10] for p in m.problems[:3])
