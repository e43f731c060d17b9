"""The HTTP routes of tau-server: contract shapes, our extra routes, errors, auth, body cap."""

from __future__ import annotations

import pytest

from tau_mcp.servers.engine.canonical import canonical_hash
from tests.support import conformance as conf
from tests.support.data import DEMO_DIR
from tests.support.harness import load
from tests.support.server import serving


async def test_health_tasks_and_episode_lifecycle() -> None:
    async with serving(["mock"], DEMO_DIR) as srv, srv.http() as http:
        health = await http.get("/health")
        assert health.status_code == 200 and health.json() == {"status": "ok", "domains": ["mock"]}

        tasks = (await http.get("/mock/tasks", params={"split": "base"})).json()["tasks"]
        assert sorted(t["id"] for t in tasks) == sorted(load("mock", DEMO_DIR).task_ids("base"))

        created = await http.post(
            "/mock/episodes",
            json={"task_id": "demo_history", "episode_id": "ep-1"},
        )
        assert created.status_code == 201
        assert created.json() == {
            "episode_id": "ep-1",
            "agent_mcp": "/mock/episodes/ep-1/agent/mcp",
            "user_mcp": "/mock/episodes/ep-1/user/mcp",
        }
        state = (await http.get("/mock/episodes/ep-1/state")).json()
        assert set(state) == {"agent_db", "user_db"} and "tasks" in state["agent_db"]
        hashes = (await http.get("/mock/episodes/ep-1/hash")).json()
        assert hashes["agent_db"] == canonical_hash(state["agent_db"])

        assert (await http.delete("/mock/episodes/ep-1")).status_code == 204
        gone = await http.get("/mock/episodes/ep-1/state")
        assert gone.status_code == 404 and "ep-1" in gone.json()["error"]

        fresh = await http.post("/mock/episodes")  # no body: from the domain DB, id chosen by us
        assert fresh.status_code == 201 and len(fresh.json()["episode_id"]) == 32


@pytest.mark.needs_data("conformance")
async def test_replay_and_assertions_routes() -> None:
    record = conf.gold("mock")["create_task_1_with_env_assertions"]
    async with serving(["mock"]) as srv, srv.http() as http:
        await http.post(
            "/mock/episodes",
            json={"task_id": "create_task_1_with_env_assertions", "episode_id": "r"},
        )
        calls = [{k: s[k] for k in ("requestor", "name", "arguments")} for s in record["steps"]]
        outputs = (await http.post("/mock/episodes/r/replay", json={"calls": calls})).json()[
            "outputs"
        ]
        assert [(o["output"], o["error"]) for o in outputs] == [
            (s["output"], s["error"]) for s in record["steps"]
        ]
        assert (await http.get("/mock/episodes/r/hash")).json() == record["final_sha"]

        checks = [item["assertion"] for item in record["env_assertions"]]
        results = (
            await http.post(
                "/mock/episodes/r/assertions", json={"assertions": checks + [{"bogus": 1}]}
            )
        ).json()["results"]
        assert [r["met"] for r in results[:-1]] == [
            item["met"] for item in record["env_assertions"]
        ]
        assert results[-1]["met"] is None and "malformed" in results[-1]["error"]

        # only_mutating skips reads (null) and replays writes.
        await http.post("/mock/episodes", json={"episode_id": "m"})
        mixed = [
            {"requestor": "assistant", "name": "get_users", "arguments": {}},
            {
                "requestor": "assistant",
                "name": "create_task",
                "arguments": {"user_id": "user_1", "title": "x"},
            },
        ]
        outputs = (
            await http.post("/mock/episodes/m/replay", json={"calls": mixed, "only_mutating": True})
        ).json()["outputs"]
        assert (
            outputs[0] is None
            and outputs[1]["error"] is False
            and '"title": "x"' in outputs[1]["output"]
        )


JSON = {"content-type": "application/json"}


async def test_errors_are_json_with_4xx() -> None:
    async with serving(["mock"], DEMO_DIR, max_body_bytes=4096) as srv, srv.http() as http:
        cases = [
            (await http.get("/airline/tasks"), 404, "unknown domain"),
            (
                await http.post("/mock/episodes", json={"task_id": "no_such_task"}),
                404,
                "unknown task",
            ),
            (
                await http.post("/mock/episodes", content=b"{not json", headers=JSON),
                400,
                "not valid JSON",
            ),
            (await http.post("/mock/episodes", json=["a"]), 400, "JSON object"),
            (await http.post("/mock/episodes", json={"episode_id": "a/b"}), 400, "episode_id"),
            (await http.get("/mock/tasks", params={"split": "nope"}), 404, "unknown split"),
            (await http.delete("/mock/episodes/missing"), 404, "unknown episode"),
            (await http.get("/mock/episodes/missing/agent/mcp"), 404, "unknown episode"),
            (
                await http.post("/mock/episodes", content=b"x" * 5000, headers=JSON),
                413,
                "too large",
            ),
            (await http.get("/no/such/route/here/at/all"), 404, "no route"),
            (
                await http.post("/mock/episodes/x/replay", json={"calls": "x"}),
                404,
                "unknown episode",
            ),
        ]
        await http.post("/mock/episodes", json={"episode_id": "dup"})
        cases.append(
            (await http.post("/mock/episodes", json={"episode_id": "dup"}), 409, "already exists")
        )
        cases.append(
            (
                await http.post("/mock/episodes/dup/replay", json={"calls": "x"}),
                400,
                "must be a list",
            )
        )
        for response, status, words in cases:
            assert response.status_code == status, (response.status_code, response.text)
            assert words.lower() in response.json()["error"].lower(), response.json()


async def test_bearer_token_guards_routes_and_mcp() -> None:
    async with serving(["mock"], DEMO_DIR, token="s3cret") as srv:
        async with srv.http() as anonymous:
            for response in (
                await anonymous.get("/health"),
                await anonymous.post("/mock/episodes"),
                await anonymous.post("/mock/agent/mcp", json={}),
            ):
                assert response.status_code == 401 and "token" in response.json()["error"]
        async with srv.http(headers={"Authorization": "Bearer wrong"}) as wrong:
            assert (await wrong.get("/health")).status_code == 401
        async with srv.http(headers={"Authorization": "Bearer s3cret"}) as ok:
            assert (await ok.get("/health")).status_code == 200
        async with srv.mcp("/mock/agent/mcp", token="s3cret") as client:
            assert {t.name for t in await client.list_tools()} >= {"get_users"}
