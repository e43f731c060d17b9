"""The llm agent and llm user through real litellm over HTTP, against a scripted fake model
server, with the domain served over MCP (mock: the user has tools of its own)."""

from __future__ import annotations

import pytest

from tau_mcp.conversation.messages import parse_message
from tau_mcp.grading import Grader, Judge
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tests.support.data import DEMO_DIR
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.harness import load, mcp_backend

AGENT, USER, JUDGE = "agent-model", "user-model", "judge-model"


@pytest.mark.needs_data  # the reference mock's notifications and prompts
async def test_llm_agent_and_user_with_user_tools(fake: FakeLLMServer):
    fake.script(
        USER,
        call("check_notifications"),
        text("I finished task_1, please mark it completed."),
        call("dismiss_notification", notification_id="notif_1"),
        text("Thanks, bye! ###STOP###"),
    )
    fake.script(
        AGENT,
        call("update_task_status", task_id="task_1", status="completed"),
        text("task_1 is now completed."),
    )
    domain = load("mock")
    config = fake.run_config("mock", "update_task_with_user_tools", AGENT, USER)
    async with mcp_backend(domain) as backend:
        results = await Runner(SimulationRunner(backend, domain, config)).run()
    (sim,) = results.simulations
    assert sim["termination_reason"] == "user_stop", sim.get("info")
    roles = [(m["role"], m.get("requestor")) for m in sim["messages"]]
    assert roles == [
        ("assistant", None),
        ("user", None),
        ("tool", "user"),
        ("user", None),
        ("assistant", None),
        ("tool", "assistant"),
        ("assistant", None),
        ("user", None),
        ("tool", "user"),
        ("user", None),
    ]
    notifications = sim["messages"][2]["content"]
    assert "notif_1" in notifications and not sim["messages"][2]["error"]
    assert [m["turn_idx"] for m in sim["messages"]] == list(range(10))
    assert all(
        m["usage"] == {"completion_tokens": 7, "prompt_tokens": 11}
        for m in sim["messages"][1:]
        if m["role"] == "user"
    )

    info = sim["reward_info"]
    # The user dismissed its notification, which the gold run never does: the agent DB matches
    # but the user DB does not, so the DB check fails while the assertion on it passes.
    assert info["db_check"] == {"db_match": False, "db_reward": 0.0}
    assert [c["met"] for c in info["env_assertions"]] == [True]
    assert [c["action_match"] for c in info["action_checks"]] == [True]
    assert info["reward"] == 0.0 and info["reward_breakdown"] == {
        "DB": 0.0,
        "ENV_ASSERTION": 1.0,
        "ACTION": 1.0,
    }

    agent_request = fake.requests[AGENT][0]
    assert (
        agent_request["messages"][0]["role"] == "system"
        and "policy" in agent_request["messages"][0]["content"].lower()
    )
    assert {t["function"]["name"] for t in agent_request["tools"]} >= {
        "create_task",
        "update_task_status",
    }
    user_request = fake.requests[USER][0]
    assert {t["function"]["name"] for t in user_request["tools"]} == {
        "check_notifications",
        "dismiss_notification",
    }
    # The user model sees the agent's greeting as the other party's ("user") turn.
    assert user_request["messages"][1] == {
        "role": "user",
        "content": "Hi! How can I help you today?",
    }
    assert (
        "check_notifications" in user_request["messages"][0]["content"]
    )  # the scenario is in the prompt


@pytest.mark.needs_data("reference_texts")  # the reference's judge request
async def test_nl_assertions_judged_by_a_model(fake: FakeLLMServer):
    fake.script(
        USER,
        text("Please create a task 'Important Meeting' for user_1."),
        text("Great. ###STOP###"),
    )
    fake.script(
        AGENT,
        call("create_task", user_id="user_1", title="Important Meeting"),
        text("Created task_2 for you, well done planning ahead!"),
    )
    fake.script(
        JUDGE,
        text(
            '{"results": [{"expectedOutcome": "The task is created successfully",'
            ' "reasoning": "created", "metExpectation": true},'
            ' {"expectedOutcome": "The user is complimented", "reasoning": "no compliment",'
            ' "metExpectation": false}]}'
        ),
    )
    domain = load("mock")
    config = fake.run_config("mock", "create_task_1_nl_eval", AGENT, USER)
    async with mcp_backend(domain) as backend:
        results = await Runner(SimulationRunner(backend, domain, config)).run()
        (sim,) = results.simulations
        # The task's basis leaves NL assertions out, so the run did not judge them.
        assert sim["reward_info"]["nl_assertions"] is None and not fake.requests[JUDGE]

        # Graded against a basis that includes them, the judge model decides.
        task = domain.task("create_task_1_nl_eval")
        criteria = task.evaluation_criteria.model_copy(
            update={"reward_basis": ["DB", "NL_ASSERTION"]}
        )
        task = task.model_copy(update={"evaluation_criteria": criteria})
        grader = Grader(backend, domain, Judge(f"openai/{JUDGE}", fake.llm_args()))
        messages = [parse_message(m) for m in sim["messages"]]
        ref = await grader.rebuild(task, messages, 0, solo=False)
        info = await grader.grade(task, messages, sim["termination_reason"], ref)
    assert [c["met"] for c in info["nl_assertions"]] == [True, False]
    assert info["nl_assertions"][1]["nl_assertion"] == "The user is complimented"
    # No gold actions or env assertions: the DB part passes without a breakdown entry.
    assert info["db_check"] == {"db_match": True, "db_reward": 1.0}
    assert info["reward_breakdown"] == {"NL_ASSERTION": 0.0} and info["reward"] == 0.0
    # The data folder has reference texts, so the judge is asked the reference's way: the
    # whole trajectory by role, the outcomes as a list, at the default temperature.
    request = fake.requests[JUDGE][0]
    prompt = request["messages"][1]["content"]
    assert "assistant: Created task_2 for you" in prompt and "tool: {" in prompt
    assert repr(task.evaluation_criteria.nl_assertions) in prompt
    assert request["temperature"] == 0.0 and "seed" not in request


async def test_a_model_failure_is_an_infrastructure_error(fake: FakeLLMServer):
    domain = load("mock", DEMO_DIR)  # nothing scripted: every model call fails
    config = fake.run_config("mock", "demo_create", AGENT, USER, max_retries=1, retry_delay=0.0)
    async with mcp_backend(domain) as backend:
        results = await Runner(SimulationRunner(backend, domain, config)).run()
    (sim,) = results.simulations
    assert sim["termination_reason"] == "infrastructure_error"
    assert sim["reward_info"] is None and sim["info"]["attempts"] == 2
    assert len(fake.requests[USER]) == 2  # one try and one retry


async def test_solo_agent_works_the_ticket_and_stops_with_done(fake: FakeLLMServer):
    fake.script(
        AGENT, call("create_task", user_id="chidi", title="Book flights to Lagos"), call("done")
    )
    domain = load("mock", DEMO_DIR)
    config = RunConfig(
        judge_llm="none",
        domain="mock",
        agent="solo",
        agent_llm=f"openai/{AGENT}",
        agent_llm_args=fake.llm_args(),
        user="dummy",
        task_ids=["demo_create"],
        max_retries=0,
    )
    async with mcp_backend(domain) as backend:
        (sim,) = (await Runner(SimulationRunner(backend, domain, config)).run()).simulations
    assert sim["termination_reason"] == "agent_stop"
    assert [m["role"] for m in sim["messages"]] == ["assistant", "tool", "assistant"]
    assert (
        sim["messages"][-1]["content"] == "###STOP###" and sim["messages"][-1]["tool_calls"] is None
    )
    assert sim["reward_info"]["db_check"]["db_match"] is True
    request = fake.requests[AGENT][0]
    assert request["tool_choice"] == "required"
    names = {t["function"]["name"] for t in request["tools"]}
    assert {"done", "create_task", "check_notifications"} <= names  # agent and user tools
    assert "book flights to lagos" in request["messages"][0]["content"].lower()  # the ticket
