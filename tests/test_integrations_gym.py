"""The Gymnasium environments on real episodes with the scripted user (no model, no key):
Gymnasium's own checker, gold plans stepped in both tool-call forms (reward 1.0, and equal to
what `tau-harness run --agent oracle` grades), skipped plans (0.0), limits, and eight envs in
an AsyncVectorEnv against one tau-server with their episodes kept apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.data import DATA_DIR, DEMO_DIR
from tests.support.gym import CLOSING, gold_policy
from tests.support.harness import domain_available

gym = pytest.importorskip("gymnasium", reason="gymnasium not installed (pip install -e '.[gym]')")

from gymnasium.utils.env_checker import check_env  # noqa: E402

import tau_mcp.harness.integrations.gym  # noqa: E402,F401 - registers the ids on Gymnasium 1.x

TASKS = {
    "mock": ["demo_history", "demo_create"],
    "airline": ["3", "7"],
    "telecom": [
        "[mobile_data_issue]data_mode_off[PERSONA:None]",
        "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]",
    ],
}


def data_for(domain: str) -> Path:
    """The bundled demo data for mock; the reference data (or a skip) for the others."""
    if domain == "mock":
        return DEMO_DIR
    reason = domain_available(domain)
    if reason:
        pytest.skip(reason)
    return DATA_DIR


def make_agent_env(domain: str, task_id: str | None = None, **kwargs):
    settings = {"user": "scripted", "data_dir": str(data_for(domain)), **kwargs}
    return gym.make("tau-mcp/Agent-v0", domain=domain, task_id=task_id, **settings)


def play(env, task_id: str, actions=None):
    """Reset on the task, step the gold plan (or the given actions); the last step's tuple."""
    observation, info = env.reset(seed=7, options={"task_id": task_id})
    assert info["task_id"] == task_id
    task = env.unwrapped.driver.domain.task(task_id)
    policy = gold_policy(task) if actions is None else iter(actions)
    if actions is None:
        next(policy)
    for _ in range(60):
        action = policy.send(observation) if actions is None else next(policy)
        observation, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return observation, reward, terminated, truncated, info
        assert reward == 0.0
    raise AssertionError("the episode did not end")


def tool_calls(simulation: dict) -> list[tuple]:
    return [
        (c["requestor"], c["name"], c["arguments"])
        for m in simulation["messages"]
        for c in m.get("tool_calls") or []
    ]


def oracle_runs(domain: str, task_ids: list[str], tmp_path: Path) -> dict[str, dict]:
    from typer.testing import CliRunner

    from tau_mcp.harness.cli import app

    out = tmp_path / f"oracle_{domain}.json"
    result = CliRunner().invoke(
        app,
        ["run", "--domain", domain, "--agent", "oracle", "--user", "scripted",
         "--judge-llm", "none", "--data-dir", str(data_for(domain)), "--save-to", str(out),
         "--task-ids", ",".join(task_ids)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    sims = json.loads(out.read_text())["simulations"]
    return {s["task_id"]: s for s in sims}


def test_registered_ids_make_envs():
    env = make_agent_env("mock", "demo_create")
    try:
        assert env.spec.id == "tau-mcp/Agent-v0"
        observation, info = env.reset(seed=1)
        assert observation.startswith("user: ")  # the scripted user's opening line
        names = [t["function"]["name"] for t in info["tools"]]
        assert {"create_task", "get_users", "done"} <= set(names)
        assert "policy" in info and info["policy"]
    finally:
        env.close()


def test_the_entry_point_registers_both_ids_as_plugin_loading_gymnasium_does():
    """Gymnasium 0.26-0.29 call each `gymnasium.envs` entry point inside its namespace on
    import; 1.x no longer does (docs/rl.md), so this replays what they did."""
    from importlib.metadata import entry_points

    from gymnasium.envs.registration import namespace, registry

    [plugin] = [ep for ep in entry_points(group="gymnasium.envs") if ep.name == "tau-mcp"] or [None]
    assert plugin is not None, "entry point missing: reinstall with pip install -e '.[gym]'"
    saved = {i: registry.pop(i) for i in ("tau-mcp/Agent-v0", "tau-mcp/User-v0")}
    try:
        with namespace(plugin.name):
            plugin.load()()
        assert registry["tau-mcp/Agent-v0"].entry_point.endswith(":AgentEnv")
        assert registry["tau-mcp/User-v0"].entry_point.endswith(":UserEnv")
    finally:
        registry.update(saved)


@pytest.mark.e2e
def test_make_works_after_import_gymnasium_alone():
    """As users write it: a fresh interpreter, `import gymnasium`, `make` (the extra installs a
    Gymnasium that loads the entry point on import); the module-prefixed id works too."""
    import subprocess
    import sys

    if not gym.__version__.startswith("0."):
        pytest.skip("Gymnasium 1.x loads no plugins on import; the gym extra installs 0.29")
    code = (
        "import gymnasium as gym\n"
        "ids = ['tau-mcp/Agent-v0', 'tau_mcp.harness.integrations.gym:tau-mcp/User-v0']\n"
        "agent = gym.make(ids[0], domain='mock', task_id='demo_create', user='scripted',"
        " data_dir=DATA)\n"
        "obs, info = agent.reset(seed=0)\n"
        "assert obs.startswith('user:'), obs\n"
        "agent.close()\n"
        "user = gym.make(ids[1], domain='mock', task_id='demo_create', agent='oracle',"
        " data_dir=DATA)\n"
        "user.reset(seed=0)\n"
        "user.close()\n"
        "print('ok')\n"
    ).replace("DATA", repr(str(DEMO_DIR)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_check_env_agent():
    env = make_agent_env("mock", "demo_create")
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_check_env_user():
    env = gym.make(
        "tau-mcp/User-v0",
        domain="mock",
        task_id="demo_create",
        agent="oracle",
        data_dir=str(DEMO_DIR),
    )
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


@pytest.mark.parametrize("domain", list(TASKS))
def test_gold_plan_scores_one_and_matches_the_oracle_run(domain: str, tmp_path: Path):
    env = make_agent_env(domain)
    try:
        finals = {}
        for task_id in TASKS[domain]:
            observation, reward, terminated, truncated, info = play(env, task_id)
            assert (terminated, truncated) == (True, False)
            assert reward == 1.0, info["reward_info"]
            if info["termination_reason"] == "user_stop":  # the user's goodbye is observed
                assert observation.startswith("user: ") and "###STOP###" in observation
            else:  # the policy said the oracle's closing line, which ends the call itself
                assert info["termination_reason"] == "agent_stop" and observation == ""
            finals[task_id] = info["simulation"]
        oracle = oracle_runs(domain, TASKS[domain], tmp_path)
        for task_id, simulation in finals.items():
            assert simulation["reward_info"] == oracle[task_id]["reward_info"], task_id
            assert tool_calls(simulation) == tool_calls(oracle[task_id]), task_id
    finally:
        env.close()


@pytest.mark.parametrize("domain", list(TASKS))
def test_skipping_the_gold_actions_scores_zero(domain: str):
    env = make_agent_env(domain)
    try:
        task_id = TASKS[domain][-1]
        *_, reward, terminated, truncated, info = play(env, task_id, [CLOSING])
        assert (terminated, truncated) == (True, False)
        assert reward == 0.0 and info["reward_info"]["reward"] == 0.0
    finally:
        env.close()


def test_invalid_actions_are_refused_without_a_turn():
    env = make_agent_env("mock", "demo_create")
    try:
        before, _ = env.reset(seed=3)
        for bad in ["   ", 42, {"content": ""}, '{"name": "create_task", "arguments": "{oops"}']:
            observation, reward, terminated, truncated, info = env.step(bad)
            assert observation.startswith("Invalid action: ") and info["invalid_action"]
            assert (reward, terminated, truncated) == (0.0, False, False)
        # Code is never run: these are just text to the user, who then ends the call.
        observation, *_ = env.step("__import__('os').system('echo pwned')")
        assert "###STOP###" in observation
    finally:
        env.close()


def test_an_openai_message_dict_is_an_action():
    env = make_agent_env("mock", "demo_create")
    try:
        env.reset(seed=3)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {
                        "name": "create_task",
                        "arguments": '{"user_id": "chidi", "title": "Book flights to Lagos"}',
                    },
                }
            ],
        }
        observation, *_ = env.step(message)
        assert observation.startswith("tool: ") and "Book flights to Lagos" in observation
        *_, reward, terminated, _, info = env.step({"role": "assistant", "content": CLOSING})
        assert terminated and reward == 1.0
        calls = [c for m in info["simulation"]["messages"] for c in m.get("tool_calls") or []]
        assert [c["id"] for c in calls] == ["call_a"]
    finally:
        env.close()


def test_step_limit_truncates():
    env = make_agent_env("mock", "demo_create", max_steps=6)
    try:
        env.reset(seed=3)
        for _ in range(10):
            observation, reward, terminated, truncated, info = env.step("get_users()")
            if terminated or truncated:
                break
        assert (terminated, truncated) == (False, True)
        assert info["termination_reason"] == "max_steps" and reward == 0.0
    finally:
        env.close()


def test_user_env_plays_the_customer_against_the_oracle():
    """The policy does the user's gold actions on the user's own tools and talks to the oracle
    agent; the oracle's closing line ends the call with the gold reward."""
    reason = domain_available("telecom")
    if reason:
        pytest.skip(reason)
    task_id = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"
    env = gym.make(
        "tau-mcp/User-v0", domain="telecom", task_id=task_id, agent="oracle",
        data_dir=str(DATA_DIR),
    )  # fmt: skip
    try:
        observation, info = env.reset(seed=5)
        assert observation.startswith("assistant: ")  # the greeting
        assert info["scenario"] and "toggle_data" in [t["function"]["name"] for t in info["tools"]]
        observation, reward, terminated, *_ = env.step("toggle_data()")  # the leading user run
        assert observation.startswith("tool: ") and not terminated
        observation, reward, terminated, truncated, info = env.step(
            "My mobile data is not working, can you help?"
        )
        assert (terminated, truncated) == (True, False)
        assert info["termination_reason"] == "agent_stop"
        assert reward == 1.0, info["reward_info"]
        assert observation.startswith("assistant: ") and "###STOP###" in observation
    finally:
        env.close()


def _vector_env(base: str, count: int):
    def make():
        return gym.make(
            "tau-mcp/Agent-v0", domain="mock", task_id="demo_create", user="scripted",
            data_dir=str(DEMO_DIR), server=base,
        )  # fmt: skip

    return gym.vector.AsyncVectorEnv([make] * count, shared_memory=False)


@pytest.mark.e2e
@pytest.mark.parametrize("workers", ["1", "2"])  # one process; the front and two workers
def test_async_vector_env_over_eight_envs_keeps_episodes_apart(workers: str):
    """Eight envs on one tau-server: even ones create the task, odd ones only look; each
    sees a fresh DB (the new task is task_4 everywhere) and is graded on its own episode."""
    import httpx

    from tests.support.server import real_server

    with real_server("mock", "--workers", workers, data_dir=DEMO_DIR) as base:
        envs = _vector_env(base, 8)
        try:
            observations, infos = envs.reset(seed=11)
            assert all(o.startswith("user: ") for o in observations)
            episodes = list(infos["episode_id"])
            assert len(set(episodes)) == 8
            gold = "create_task(user_id='chidi', title='Book flights to Lagos')"
            actions = [gold if i % 2 == 0 else "get_users()" for i in range(8)]
            observations, rewards, terminated, truncated, infos = envs.step(actions)
            assert not terminated.any() and not truncated.any()
            for i in range(0, 8, 2):
                assert '"task_id": "task_4"' in observations[i]
            live = [httpx.get(f"{base}/mock/episodes/{e}/state").status_code for e in episodes]
            assert live == [200] * 8
            observations, rewards, terminated, truncated, infos = envs.step([CLOSING] * 8)
            assert terminated.all()
            assert list(rewards) == [1.0, 0.0] * 4
            # Finished episodes are deleted from the server.
            gone = [httpx.get(f"{base}/mock/episodes/{e}/state").status_code for e in episodes]
            assert gone == [404] * 8
        finally:
            envs.close()


@pytest.mark.e2e
def test_close_and_reset_delete_unfinished_episodes():
    import httpx

    from tests.support.server import real_server

    with real_server("mock", data_dir=DEMO_DIR) as base:
        env = make_agent_env("mock", "demo_create", server=base)
        try:
            _, info = env.reset(seed=1)
            first = info["episode_id"]
            assert httpx.get(f"{base}/mock/episodes/{first}/state").status_code == 200
            _, info = env.reset(seed=2)  # a fresh episode; the unfinished one is deleted
            second = info["episode_id"]
            assert second != first
            assert httpx.get(f"{base}/mock/episodes/{first}/state").status_code == 404
            assert httpx.get(f"{base}/mock/episodes/{second}/state").status_code == 200
        finally:
            env.close()
        assert httpx.get(f"{base}/mock/episodes/{second}/state").status_code == 404


def test_llm_user_and_llm_agent_through_litellm(fake):
    """The default partners are models: Agent-v0 against the llm user, User-v0 against the
    llm agent, both answered by the fake model server."""
    from tests.support.fake_llm_server import call, text

    fake.script(
        "user",
        text("Please create a task 'Book flights to Lagos' for chidi."),
        text("Thanks! ###STOP###"),
    )
    env = make_agent_env(
        "mock", "demo_create", user="llm", user_llm="openai/user", user_llm_args=fake.llm_args()
    )
    try:
        observation, _ = env.reset(seed=1)
        assert observation == "user: Please create a task 'Book flights to Lagos' for chidi."
        env.step("create_task(user_id='chidi', title='Book flights to Lagos')")
        observation, reward, terminated, _, info = env.step("Created it for you.")
        assert terminated and reward == 1.0 and observation == "user: Thanks! ###STOP###"
        # The user model saw the agent's words as its interlocutor's.
        assert fake.requests["user"][-1]["messages"][-1]["content"] == "Created it for you."
    finally:
        env.close()

    fake.script(
        "agent",
        call("create_task", user_id="chidi", title="Book flights to Lagos"),
        text("Your task is created."),
    )
    env = gym.make(
        "tau-mcp/User-v0", domain="mock", task_id="demo_create", agent="llm",
        agent_llm="openai/agent", agent_llm_args=fake.llm_args(), data_dir=str(DEMO_DIR),
    )  # fmt: skip
    try:
        env.reset(seed=1)
        observation, reward, terminated, *_ = env.step("Create 'Book flights to Lagos' for chidi.")
        assert observation == "assistant: Your task is created." and not terminated
        observation, reward, terminated, truncated, info = env.step("Great, bye. ###STOP###")
        assert (terminated, truncated, reward) == (True, False, 1.0)
        assert info["termination_reason"] == "user_stop"
    finally:
        env.close()


def test_solo_mode_works_the_ticket_with_both_sides_tools():
    task_id = "[mobile_data_issue]data_mode_off|data_usage_exceeded[PERSONA:None]"
    env = make_agent_env("telecom", task_id, solo_mode=True)
    try:
        observation, info = env.reset(seed=0)
        assert observation == "" and info["ticket"]  # as in the reference: no user, a ticket
        names = {t["function"]["name"] for t in info["tools"]}
        assert {"toggle_data", "refuel_data", "done"} <= names
        observation, *_ = env.step("toggle_data()")
        assert observation.startswith("tool: ")
        observation, *_ = env.step(
            {"name": "refuel_data", "arguments": {"customer_id": "C1001", "line_id": "L1002",
                                                   "gb_amount": 2.0}}
        )  # fmt: skip
        *_, reward, terminated, truncated, info = env.step("done()")
        assert (terminated, truncated) == (True, False)
        assert info["termination_reason"] == "agent_stop" and reward == 1.0, info["reward_info"]
    finally:
        env.close()


@pytest.mark.e2e
def test_a_process_that_never_closes_its_env_exits_and_deletes_the_episode():
    import os
    import subprocess
    import sys

    import httpx

    from tests.support.server import real_server

    script = (
        "import gymnasium as gym, tau_mcp.harness.integrations.gym\n"
        "env = gym.make('tau-mcp/Agent-v0', domain='mock', task_id='demo_create',"
        f" user='scripted', data_dir={str(DEMO_DIR)!r}, server=SERVER)\n"
        "print(env.reset(seed=0)[1]['episode_id'])\n"
    )
    with real_server("mock", data_dir=DEMO_DIR) as base:
        done = subprocess.run(
            [sys.executable, "-c", f"SERVER = {base!r}\n" + script],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        episode = done.stdout.strip().splitlines()[-1]
        assert httpx.get(f"{base}/mock/episodes/{episode}/state").status_code == 404
