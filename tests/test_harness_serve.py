"""`tau-harness serve`: outside MCP clients play graded simulations against the simulated user.

Both fastmcp's `Client` and the official `mcp` SDK client play the agent over real HTTP on
loopback (the serve app hosted in the test's event loop), with `tests/support/mcp_agent_program.py`
following each task's gold plan the way the `oracle` agent does.
"""

from __future__ import annotations

import asyncio
import json
from contextlib import asynccontextmanager

import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from mcp import Client as SdkClient
from mcp.client.streamable_http import streamable_http_client

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.results import journal_path, load_results
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import make_hub
from tau_mcp.servers.engine.tool_listing import tool_listing
from tests.support.fake_llm_server import text
from tests.support.harness import domain_available, load, mcp_backend
from tests.support.mcp_agent_program import play
from tests.support.signals import interruptible

pytestmark = pytest.mark.needs_data

AIRLINE_TASK = "7"  # five agent actions; DB and COMMUNICATE in the reward
TELECOM_TASK = (
    "[mms_issue]airplane_mode_on|bad_network_preference|bad_wifi_calling|data_usage_exceeded|"
    "unseat_sim_card|user_abroad_roaming_disabled_on[PERSONA:Easy]"
)  # four of its six gold actions are the user's, on the user's own device tools
TASKS = {"mock": "create_task_1", "airline": AIRLINE_TASK, "telecom": TELECOM_TASK}


@asynccontextmanager
async def served(name: str, token: str | None = None, save_to=None, **settings):
    missing = domain_available(name)
    if missing:
        pytest.skip(missing)
    domain = load(name)
    config = RunConfig(
        domain=name, agent="mcp", **{"user": "scripted", "judge_llm": "none", **settings}
    )
    async with mcp_backend(domain) as backend:
        hub = make_hub(backend, domain, config, save_to)
        try:
            async with hosted(hub, token) as base:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with httpx2.AsyncClient(base_url=base, headers=headers, timeout=60) as http:
                    yield base, http, hub, domain
        finally:
            await hub.close()


async def _create(http, task_id: str, trial: int = 0) -> dict:
    response = await http.post("/simulations", json={"task_id": task_id, "trial": trial})
    assert response.status_code == 201, response.text
    return response.json()


@asynccontextmanager
async def agent_client(kind: str, url: str, token: str | None = None):
    """(call, instructions, read_policy, list_tools) over the chosen client library."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if kind == "fastmcp":
        from fastmcp.client.transports import StreamableHttpTransport

        async with FastMCPClient(StreamableHttpTransport(url, headers=headers)) as client:

            async def call(name, arguments):
                result = await client.call_tool(name, arguments, raise_on_error=False)
                return "".join(getattr(b, "text", "") for b in result.content), result.is_error

            async def policy(uri):
                return (await client.read_resource(uri))[0].text

            yield call, client.instructions, policy, client.list_tools
        return
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with SdkClient(streamable_http_client(url, http_client=http)) as client:

            async def call(name, arguments):
                result = await client.call_tool(name, arguments)
                return "".join(getattr(b, "text", "") for b in result.content), result.is_error

            async def policy(uri):
                return (await client.read_resource(uri)).contents[0].text

            async def tools():
                return (await client.list_tools()).tools

            yield call, client.instructions, policy, tools


@pytest.mark.parametrize("kind", ["fastmcp", "mcp-sdk"])
@pytest.mark.parametrize("name", list(TASKS))
async def test_an_mcp_client_plays_the_gold_plan_and_gets_reward_one(name: str, kind: str):
    async with served(name, judge_llm="none") as (base, http, hub, domain):
        created = await _create(http, TASKS[name])
        assert created["mcp"] == f"/simulations/{created['simulation_id']}/mcp"
        async with agent_client(kind, base + created["mcp"]) as (call, instructions, policy, tools):
            policy_text = domain.policy()
            assert instructions == policy_text
            assert await policy(f"tau2://{name}/policy") == policy_text
            listed = {t.name: t for t in await tools()}
            # The one listing (the reference's texts with this data), then our own tool.
            shown = tool_listing(domain, "agent").tools
            specs = {spec.name: spec for spec in shown}
            assert list(listed) == [*specs, "send_message_to_user"]
            for tool_name, spec in specs.items():
                schema = getattr(listed[tool_name], "input_schema", None) or getattr(
                    listed[tool_name], "inputSchema", None
                )
                assert schema == spec.input_schema, tool_name
                assert listed[tool_name].description == spec.description, tool_name
            log = await play(call, domain.task(TASKS[name]))
            assert "ended the conversation" in log[-1][1]
            after = await call("send_message_to_user", {"message": "Anything else?"})
            assert after[1] and "has ended" in after[0]
            assert (await call(next(iter(specs)), {}))[1]  # tools are refused too
        sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
    assert sim["termination_reason"] == "user_stop"
    assert sim["reward_info"]["reward"] == 1.0, sim["reward_info"]
    assert sim["id"] == created["simulation_id"] and sim["info"]["status"] == "ended"
    messages = sim["messages"]
    assert messages[0]["role"] == "assistant" and messages[0]["content"].startswith("Hi!")
    assert messages[-1]["role"] == "user" and "###STOP###" in messages[-1]["content"]
    assert [m["turn_idx"] for m in messages] == list(range(len(messages)))
    agent_calls = [
        c["name"] for m in messages if m["role"] == "assistant" for c in m["tool_calls"] or []
    ]
    gold = domain.task(TASKS[name]).evaluation_criteria.actions
    assert agent_calls == [a.name for a in gold if a.requestor == "assistant"]
    user_calls = [c for m in messages if m["role"] == "user" for c in m["tool_calls"] or []]
    if name == "telecom":  # the user's own tool calls, and their results, are in the record
        assert [c["name"] for c in user_calls] == [a.name for a in gold if a.requestor == "user"]
        assert all(c["requestor"] == "user" for c in user_calls)
        assert any(m["role"] == "tool" and m["requestor"] == "user" for m in messages)
    # Agent tool results are exactly what the episode's agent endpoint answers.
    tool_texts = [m["content"] for m in messages if m["role"] == "tool"]
    assert all(text is not None for text in tool_texts)


async def test_skipping_the_actions_scores_zero():
    async with served("airline", judge_llm="none") as (base, http, hub, domain):
        created = await _create(http, AIRLINE_TASK)
        async with agent_client("fastmcp", base + created["mcp"]) as (call, *_):
            await play(call, domain.task(AIRLINE_TASK), skip_actions=True)
        sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
    assert sim["termination_reason"] == "user_stop"
    assert sim["reward_info"]["reward"] == 0.0
    assert sim["reward_info"]["db_check"]["db_match"] is False


async def test_two_simulations_of_one_task_stay_isolated():
    async with served("mock", judge_llm="none") as (base, http, hub, domain):
        first, second = await _create(http, "create_task_1"), await _create(http, "create_task_1")
        assert first["simulation_id"] != second["simulation_id"]
        task = domain.task("create_task_1")
        async with (
            agent_client("fastmcp", base + first["mcp"]) as (call_a, *_),
            agent_client("mcp-sdk", base + second["mcp"]) as (call_b, *_),
        ):
            logs = await asyncio.gather(play(call_a, task), play(call_b, task, skip_actions=True))
        sims = [
            (await http.get(f"/simulations/{s['simulation_id']}")).json() for s in (first, second)
        ]
    created = [entry for entry in logs[0] if entry[0] == "create_task"]
    assert json.loads(created[0][1])["task_id"] == "task_2"  # not task_3: its own episode
    assert [s["reward_info"]["reward"] for s in sims] == [1.0, 0.0]


async def test_end_from_the_agent_side_then_calls_are_refused():
    async with served("mock", judge_llm="none") as (base, http, hub, domain):
        created = await _create(http, "create_task_1")
        sim_path = f"/simulations/{created['simulation_id']}"
        async with agent_client("fastmcp", base + created["mcp"]) as (call, *_):
            reply, error = await call("send_message_to_user", {"message": "Hello, how can I help?"})
            assert not error and reply  # the scripted user's reason for calling
            running = (await http.get(sim_path)).json()
            assert running["reward_info"] is None and running["info"]["status"] == "running"
            assert len(running["messages"]) == 2
            assert (await call("create_task", {"user_id": "user_1", "title": "x"}))[1] is False
            ended = await http.post(sim_path + "/end")
            assert ended.status_code == 200
            refused = await call("get_users", {})
            assert refused[1] and "has ended (agent_stop)" in refused[0]
            empty = await call("send_message_to_user", {"message": "  "})
            assert empty[1]
        sim = ended.json()
        again = await http.post(sim_path + "/end")  # ending twice changes nothing
    assert sim["termination_reason"] == "agent_stop"
    assert sim["messages"][-1]["content"] == "###STOP###"
    assert sim["reward_info"]["reward"] == 0.0  # wrong title: not the gold task
    assert again.json()["messages"] == sim["messages"]


async def test_errors_are_json_and_the_token_is_required():
    async with served("mock", token="s3cret", judge_llm="none") as (base, http, hub, domain):
        unknown_task = await http.post("/simulations", json={"task_id": "nope"})
        assert (
            unknown_task.status_code == 404
            and "unknown task 'nope'" in unknown_task.json()["error"]
        )
        unknown_sim = await http.get("/simulations/nope")
        assert (
            unknown_sim.status_code == 404 and "unknown simulation" in unknown_sim.json()["error"]
        )
        assert (await http.post("/simulations/nope/end")).status_code == 404
        mcp = await http.post(
            "/simulations/nope/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"}
        )
        assert mcp.status_code == 404 and "error" in mcp.json()
        bad = await http.post("/simulations", json={"task_id": "create_task_1", "trial": -1})
        assert bad.status_code == 400
        broken = await http.post(
            "/simulations", content=b"{", headers={"content-type": "application/json"}
        )
        assert broken.status_code == 400
        async with httpx2.AsyncClient(base_url=base) as anonymous:
            denied = await anonymous.post("/simulations", json={"task_id": "create_task_1"})
        assert denied.status_code == 401
        created = await _create(http, "create_task_1")
        async with agent_client("mcp-sdk", base + created["mcp"], token="s3cret") as (call, *_):
            reply, error = await call("send_message_to_user", {"message": "Hi"})
        assert not error
        listing = (await http.get("/simulations")).json()["simulations"]
        assert [s["simulation_id"] for s in listing] == [created["simulation_id"]]


async def test_task_history_is_shown_with_the_first_answer():
    async with served("mock", judge_llm="none") as (base, http, hub, domain):
        created = await _create(http, "update_task_with_message_history")
        async with agent_client("fastmcp", base + created["mcp"]) as (call, *_):
            first, error = await call("get_users", {})
        assert not error and first.startswith("(The conversation so far")
        sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
    history = domain.task("update_task_with_message_history").initial_state.message_history
    # The history ends on the agent's words, so the user answered them before the agent's
    # first call: the history, that answer, the call and its result.
    assert len(sim["messages"]) == len(history) + 3
    assert sim["messages"][len(history)]["content"] in first
    assert history[0].content in first


async def test_llm_user_through_the_fake_model_server(fake):
    fake.script("user-model", text("Please create a task 'Important Meeting' for user_1."))
    fake.script("user-model", text("Great, thanks! ###STOP###"))
    settings = {"user": "llm", "user_llm": "openai/user-model", "user_llm_args": fake.llm_args()}
    async with served("mock", judge_llm="none", **settings) as (base, http, hub, domain):
        created = await _create(http, "create_task_1")
        async with agent_client("mcp-sdk", base + created["mcp"]) as (call, *_):
            reply, _ = await call("send_message_to_user", {"message": "Hi! What can I do?"})
            assert reply == "Please create a task 'Important Meeting' for user_1."
            out, error = await call(
                "create_task", {"user_id": "user_1", "title": "Important Meeting"}
            )
            assert not error and json.loads(out)["task_id"] == "task_2"
            final, error = await call("send_message_to_user", {"message": "Done: task_2."})
            assert not error and "ended the conversation" in final
        sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
    assert sim["termination_reason"] == "user_stop"
    assert sim["reward_info"]["reward"] == 1.0
    (first, second) = fake.requests["user-model"]
    # The user model saw the agent's words as its counterpart's.
    assert first["messages"][-1] == {"role": "user", "content": "Hi! What can I do?"}
    assert second["messages"][-1]["content"] == "Done: task_2."


async def test_save_to_appends_and_resumes(tmp_path):
    out = tmp_path / "served.json"
    async with served("mock", judge_llm="none", save_to=out) as (base, http, hub, domain):
        created = await _create(http, "create_task_1")
        async with agent_client("fastmcp", base + created["mcp"]) as (call, *_):
            await play(call, domain.task("create_task_1"))
        assert journal_path(out).is_file()  # on disk as soon as it finished
        duplicate = await http.post("/simulations", json={"task_id": "create_task_1"})
        assert duplicate.status_code == 409
    saved = load_results(out)
    assert not journal_path(out).exists()
    assert [s["id"] for s in saved["simulations"]] == [created["simulation_id"]]
    assert saved["info"]["environment_info"]["domain_name"] == "mock"
    assert [t["id"] for t in saved["tasks"]] == ["create_task_1"]
    async with served("mock", judge_llm="none", save_to=out) as (base, http, hub, domain):
        assert (
            await http.post("/simulations", json={"task_id": "create_task_1"})
        ).status_code == 409
        second = await _create(http, "create_task_1", trial=1)
        await http.post(f"/simulations/{second['simulation_id']}/end")
    saved = load_results(out)
    assert [(s["task_id"], s["trial"]) for s in saved["simulations"]] == [
        ("create_task_1", 0),
        ("create_task_1", 1),
    ]
    with pytest.raises(Exception, match="domain 'mock'"):
        async with served("airline", judge_llm="none", save_to=out):
            pass


def test_serve_config_plays_once():
    from tau_mcp.harness.serve.simulation import serve_config

    assert serve_config(RunConfig(domain="mock").replace(max_retries=5)).max_retries == 0


async def test_unknown_tools_fail_like_the_episode_endpoint_and_limits_end_the_run():
    async with served("mock", judge_llm="none", max_steps=4) as (base, http, hub, domain):
        created = await _create(http, "create_task_1")
        async with SdkClient(
            base + created["mcp"], mode="legacy"
        ) as client:  # initialize handshake
            result = await client.call_tool("no_such_tool", {})
            assert (
                result.is_error
                and result.content[0].text == "Error: Tool 'no_such_tool' not found."
            )
            texts = []
            for _ in range(3):
                result = await client.call_tool("get_users", {})
                texts.append((result.content[0].text, result.is_error))
        sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
    assert sim["termination_reason"] == "max_steps"
    ending = [t for t in texts if "step limit" in t[0]]
    assert len(ending) == 1 and ending[0][1]  # the call in flight at the limit says so
    assert texts[-1][1]  # and later calls are refused
    assert sim["reward_info"]["reward"] == 0.0
    failed = [m for m in sim["messages"] if m["role"] == "tool" and m["error"]]
    assert failed[0]["content"] == "Error: Tool 'no_such_tool' not found."


@pytest.mark.e2e
def test_the_serve_command_end_to_end(tmp_path):
    """`tau-harness serve` as a process: token, a simulation ended by hand, saved on Ctrl-C."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import httpx

    from tests.support.data import DATA_DIR
    from tests.support.server import free_port

    port, out = free_port(), tmp_path / "served.json"
    command = [sys.executable, "-c", "from tau_mcp.harness.cli import app; app()", "serve"]
    command += ["--domain", "mock", "--user", "scripted", "--judge-llm", "none"]
    command += ["--port", str(port), "--token", "tok", "--save-to", str(out)]
    command += ["--data-dir", str(DATA_DIR)]
    proc = subprocess.Popen(
        command, stderr=subprocess.PIPE, env=os.environ.copy(), preexec_fn=interruptible()
    )
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": "Bearer tok"}
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                if httpx.get(base + "/health", headers=headers, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        assert httpx.get(base + "/health").status_code == 401
        created = httpx.post(
            base + "/simulations", json={"task_id": "create_task_1"}, headers=headers
        ).json()
        ended = httpx.post(
            f"{base}/simulations/{created['simulation_id']}/end", headers=headers, timeout=30
        ).json()
        assert ended["termination_reason"] == "agent_stop"
        assert ended["reward_info"]["reward"] == 0.0
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=20)
    saved = load_results(out)
    assert [s["id"] for s in saved["simulations"]] == [created["simulation_id"]]


@pytest.mark.e2e
async def test_episodes_on_a_running_tau_server():
    """`--server URL`: the episodes live on a separate `tau-server` process."""
    from tau_mcp.harness.backends.http import remote_backend
    from tests.support.server import real_server

    domain = load("mock")
    config = RunConfig(domain="mock", agent="mcp", user="scripted", judge_llm="none")
    with real_server("mock", "--token", "srv") as server_url:
        backend = await remote_backend(server_url, "srv", "mock")
        try:
            hub = make_hub(backend, domain, config)
            async with hosted(hub) as base:
                async with httpx2.AsyncClient(base_url=base, timeout=60) as http:
                    created = await _create(http, "create_task_1_with_env_assertions")
                    async with agent_client("fastmcp", base + created["mcp"]) as (call, *_):
                        await play(call, domain.task("create_task_1_with_env_assertions"))
                    sim = (await http.get(f"/simulations/{created['simulation_id']}")).json()
            await hub.close()
        finally:
            await backend.close()
    assert sim["termination_reason"] == "user_stop"
    assert sim["reward_info"]["reward"] == 1.0
    assert sim["info"]["episode_id"]  # created on the tau-server


@pytest.mark.needs_data("banking_knowledge", "reference_texts")
@pytest.mark.parametrize("mode", ["auto", "legacy"])  # server/discover; initialize
async def test_a_task_dependent_policy_is_each_simulations_own(mode: str):
    """golden_retrieval puts the task's documents in the policy: an outside agent gets its
    simulation's task's policy as the instructions and the policy resource (sessionless and
    legacy handshakes alike), as the reference builds it, not a task-less one."""
    import hashlib

    from fastmcp.client.transports import StreamableHttpTransport

    from tests.support.data import DATA_DIR

    golden = json.loads((DATA_DIR / "tau2/reference_texts/banking_knowledge.json").read_text())[
        "golden_retrieval_tasks"
    ]
    tasks = ["task_001", "task_002"]
    seen = {}
    async with served(
        "banking_knowledge", judge_llm="none", retrieval_config="golden_retrieval"
    ) as (
        base,
        http,
        hub,
        domain,
    ):
        for task_id in tasks:
            created = await _create(http, task_id)
            client = FastMCPClient(StreamableHttpTransport(base + created["mcp"]), mode=mode)
            async with client:
                instructions = client.instructions
                resource = (await client.read_resource("tau2://banking_knowledge/policy"))[0].text
            assert instructions == resource
            want = golden[task_id]
            assert hashlib.sha256(resource.encode()).hexdigest() == want["policy_sha256"]
            assert resource == hub.runner.policy_for(domain.task(task_id))
            seen[task_id] = resource
    assert seen["task_001"] != seen["task_002"]
