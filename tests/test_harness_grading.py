"""Grading components, one by one, on the engine directly (fast, no MCP)."""

from __future__ import annotations

import pytest

from tau_mcp.conversation.messages import ChatMessage, ToolCall
from tau_mcp.grading import Grader
from tau_mcp.grading.checks import check_actions, check_communication
from tau_mcp.harness.agents import Agent
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.metrics import pass_hat_k, summarize
from tau_mcp.harness.orchestrator import Limits, Orchestrator
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.tasks import Task
from tests.support.data import DEMO_DIR
from tests.support.engine_backend import EngineBackend
from tests.support.harness import load


def said(role: str, content: str) -> ChatMessage:
    return ChatMessage(role=role, content=content)


def called(name: str, requestor: str = "assistant", **arguments) -> ChatMessage:
    role = "user" if requestor == "user" else "assistant"
    return ChatMessage(
        role=role,
        tool_calls=[ToolCall(id="c", name=name, arguments=arguments, requestor=requestor)],
    )


def with_criteria(task: Task, **changes) -> Task:
    criteria = task.evaluation_criteria.model_copy(update=changes)
    return task.model_copy(update={"evaluation_criteria": criteria})


@pytest.fixture
def mock():
    """The bundled demo mock domain on the bare engine."""
    domain = load("mock", DEMO_DIR)
    return domain, EngineBackend({"mock": domain})


@pytest.fixture
def reference_mock():
    """The reference's mock domain (its tasks with user tools and notifications)."""
    domain = load("mock")
    return domain, EngineBackend({"mock": domain})


@pytest.mark.parametrize(
    "ending", ["max_steps", "too_many_errors", "agent_error", "user_error", "infrastructure_error"]
)
async def test_premature_endings_score_zero(mock, ending):
    domain, backend = mock
    task = domain.task("demo_create")
    ref = await backend.create_episode("mock", task.id)
    info = await Grader(backend, domain).grade(task, [], ending, ref)
    assert info["reward"] == 0.0 and info["reward_basis"] is None and info["db_check"] is None
    assert ending in info["info"]["note"]


async def test_a_task_without_criteria_passes(mock):
    domain, backend = mock
    task = domain.task("demo_create").model_copy(update={"evaluation_criteria": None})
    ref = await backend.create_episode("mock", task.id)
    info = await Grader(backend, domain).grade(task, [], "user_stop", ref)
    assert info["reward"] == 1.0 and info["reward_basis"] is None


async def test_no_actions_and_no_assertions_means_the_db_passes(mock):
    domain, backend = mock
    task = with_criteria(
        domain.task("demo_create"), actions=None, env_assertions=None, reward_basis=["DB"]
    )
    ref = await backend.create_episode("mock", task.id)
    await backend.replay(
        ref,
        [
            {
                "requestor": "assistant",
                "name": "create_task",
                "arguments": {"user_id": "ana", "title": "x"},
            }
        ],
        False,
    )
    info = await Grader(backend, domain).grade(task, [], "agent_stop", ref)
    assert info["db_check"] == {"db_match": True, "db_reward": 1.0} and info["reward"] == 1.0


@pytest.mark.needs_data
async def test_db_check_compares_both_databases(reference_mock):
    domain, backend = reference_mock
    task = domain.task("update_task_with_user_tools")  # basis DB, ACTION, ENV_ASSERTION
    grader = Grader(backend, domain)
    gold_call = {
        "requestor": "assistant",
        "name": "update_task_status",
        "arguments": {"task_id": "task_1", "status": "completed"},
    }
    dismiss = {
        "requestor": "user",
        "name": "dismiss_notification",
        "arguments": {"notification_id": "notif_1"},
    }

    exact = await backend.create_episode("mock", task.id)
    await backend.replay(exact, [gold_call], False)
    info = await grader.grade(
        task,
        [called("update_task_status", task_id="task_1", status="completed")],
        "user_stop",
        exact,
    )
    assert info["db_check"]["db_match"] is True
    assert [c["met"] for c in info["env_assertions"]] == [
        False
    ]  # the gold run never reads the notification

    user_side = await backend.create_episode("mock", task.id)
    await backend.replay(user_side, [gold_call, dismiss], False)
    info = await grader.grade(
        task,
        [called("update_task_status", task_id="task_1", status="completed")],
        "user_stop",
        user_side,
    )
    gold = await grader.gold_hashes(task)
    got = await backend.hashes(user_side)
    assert got["agent_db"] == gold["agent_db"] and got["user_db"] != gold["user_db"]
    assert info["db_check"] == {"db_match": False, "db_reward": 0.0}
    assert [c["met"] for c in info["env_assertions"]] == [True]
    assert (
        info["reward_breakdown"] == {"DB": 0.0, "ENV_ASSERTION": 1.0, "ACTION": 1.0}
        and info["reward"] == 0.0
    )


async def test_reward_is_the_product_over_the_basis_only(mock):
    domain, backend = mock
    task = with_criteria(domain.task("demo_notice"), reward_basis=["ENV_ASSERTION"])
    ref = await backend.create_episode("mock", task.id)
    await backend.replay(
        ref,
        [
            {
                "requestor": "user",
                "name": "dismiss_notification",
                "arguments": {"notification_id": "note_1"},
            }
        ],
        False,
    )
    info = await Grader(backend, domain).grade(task, [], "user_stop", ref)
    assert (
        info["db_check"]["db_match"] is False and info["action_checks"][0]["action_match"] is False
    )
    assert info["reward_breakdown"] == {"ENV_ASSERTION": 1.0} and info["reward"] == 1.0


def test_communicate_matching_rules(mock):
    domain, _ = mock
    task = with_criteria(
        domain.task("demo_create"), communicate_info=["task_2 CREATED", "1,000", "refund 1000"]
    )
    messages = [
        said("user", "task_2 created"),  # the user's words never count
        said("assistant", "Your Task_2 created, and a refund 1,000 is on its way."),
    ]
    result = check_communication(task, messages)
    assert [c["met"] for c in result.checks] == [
        True,
        False,
        True,
    ]  # commas are stripped from the text only
    assert result.reward == 0.0 and result.breakdown == {"COMMUNICATE": 0.0}
    assert check_communication(with_criteria(task, communicate_info=[]), messages).reward == 1.0


def test_action_matching_uses_compare_args(mock):
    domain, _ = mock
    kinds = {"create_task": "write", "transfer_to_human_agents": "generic"}
    impossible = domain.task("demo_delete")  # compare_args == []: any transfer matches
    result = check_actions(
        impossible, [called("transfer_to_human_agents", summary="anything")], kinds
    )
    assert result.reward == 1.0 and result.checks[0]["tool_type"] == "generic"
    create = domain.task("demo_create")  # no compare_args: every argument of the call must agree
    extra = called(
        "create_task", user_id="chidi", title="Book flights to Lagos", description="extra"
    )
    assert check_actions(create, [extra], kinds).reward == 0.0
    assert (
        check_actions(
            create, [called("create_task", user_id="chidi", title="Book flights to Lagos")], kinds
        ).reward
        == 1.0
    )
    user_call = called(
        "create_task", requestor="user", user_id="chidi", title="Book flights to Lagos"
    )
    assert check_actions(create, [user_call], kinds).reward == 1.0  # any side's calls count


async def test_nl_assertions_are_left_out_when_judging_is_off(mock):
    domain, backend = mock
    task = with_criteria(
        domain.task("demo_create"),
        nl_assertions=["The agent greets the customer."],
        reward_basis=["NL_ASSERTION"],
    )
    ref = await backend.create_episode("mock", task.id)
    info = await Grader(backend, domain, judge=None).grade(
        task, [said("assistant", "hi")], "user_stop", ref
    )
    assert info["nl_assertions"] is None and "not judged" in info["info"]["nl"]["note"]
    assert info["reward"] == 1.0 and info["reward_breakdown"] == {}


def test_pass_hat_k_and_infrastructure_errors():
    assert pass_hat_k(4, 2, 1) == 0.5 and pass_hat_k(4, 2, 2) == pytest.approx(1 / 6)
    sims = [
        {
            "task_id": "a",
            "trial": 0,
            "termination_reason": "user_stop",
            "reward_info": {"reward": 1.0, "db_check": {"db_match": True}},
        },
        {
            "task_id": "a",
            "trial": 1,
            "termination_reason": "user_stop",
            "reward_info": {"reward": 0.0, "db_check": {"db_match": False}},
        },
        {
            "task_id": "b",
            "trial": 0,
            "termination_reason": "agent_stop",
            "reward_info": {"reward": 1.0},
        },
        {
            "task_id": "b",
            "trial": 1,
            "termination_reason": "agent_stop",
            "reward_info": {"reward": 1.0},
        },
        {
            "task_id": "b",
            "trial": 2,
            "termination_reason": "infrastructure_error",
            "reward_info": None,
        },
    ]
    summary = summarize(sims)
    assert summary.infra_errors == 1 and summary.simulations == 4 and summary.tasks == 2
    assert summary.pass_hat == {1: pytest.approx(0.75), 2: pytest.approx(0.5)}
    assert summary.avg_reward == 0.75 and summary.db_match_rate == 0.5


class LoopingAgent(Agent):
    """Calls a tool that does not exist, forever."""

    async def respond(self, incoming):
        return ChatMessage(
            role="assistant", tool_calls=[ToolCall(id="x", name="no_such_tool", arguments={})]
        )


class ChattyAgent(Agent):
    async def respond(self, incoming):
        return ChatMessage(role="assistant", content="Anything else?")


class ChattyUser:
    def start(self, history):
        pass

    async def respond(self, incoming):
        return ChatMessage(role="user", content="Tell me more.")


async def _converse(backend, agent_cls, limits):
    from tau_mcp.harness.agents import AgentContext

    domain = backend.store.domains["mock"]
    task = domain.task("demo_create")
    ref = await backend.create_episode("mock", task.id)
    session = await backend.open_session(ref, "agent")
    agent = agent_cls(AgentContext(task=task, domain="mock", policy="", tools=[]))
    return await Orchestrator(agent, ChattyUser(), session, None, limits=limits).run([])


async def test_step_and_error_limits(mock):
    _, backend = mock
    conversation = await _converse(backend, LoopingAgent, Limits(max_steps=200, max_errors=10))
    assert conversation.termination.value == "too_many_errors" and conversation.tool_errors == 10
    assert conversation.messages[3].content == "Error: Tool 'no_such_tool' not found."
    conversation = await _converse(backend, ChattyAgent, Limits(max_steps=7, max_errors=10))
    assert conversation.termination.value == "max_steps" and conversation.steps == 7
    assert len(conversation.messages) == 8  # the greeting plus one message per step


async def test_solo_oracle_with_the_dummy_user(mock):
    domain, backend = mock
    config = RunConfig(
        judge_llm="none",
        domain="mock",
        agent="oracle",
        user="dummy",
        task_ids=["demo_create", "demo_complete"],
    )
    sims = (await Runner(SimulationRunner(backend, domain, config)).run()).simulations
    for sim in sims:
        assert sim["termination_reason"] == "agent_stop"
        assert sim["messages"][0]["role"] == "assistant" and sim["messages"][0]["tool_calls"]
        assert all(m["role"] != "user" for m in sim["messages"])
        assert sim["reward_info"]["db_check"]["db_match"] is True


def test_bad_run_configurations_fail_with_one_sentence(mock):
    domain, backend = mock
    from tau_mcp.harness.errors import ConfigError

    def make(**settings):
        return SimulationRunner(
            backend, domain, RunConfig(judge_llm="none", domain="mock", **settings)
        )

    # A model-driven agent without --agent-llm gets the default model.
    assert make(agent="llm", user="scripted").config.agent_llm
    with pytest.raises(ConfigError, match="dummy user only works"):
        make(agent="llm", agent_llm="m", user="dummy")
    with pytest.raises(ValueError, match="unknown agent"):
        make(agent="nope", user="scripted")


class MixedAgent(Agent):
    async def respond(self, incoming):
        return ChatMessage(
            role="assistant",
            content="Let me look.",
            tool_calls=[ToolCall(id="g", name="get_users")],
        )


class SilentAgent(Agent):
    async def respond(self, incoming):
        return ChatMessage(role="assistant", content="  ")


async def test_protocol_enforcement_and_empty_messages(mock):
    from tau_mcp.harness.agents import AgentContext
    from tau_mcp.harness.orchestrator import EmptyMessageError

    domain, backend = mock
    task = domain.task("demo_create")

    async def converse(agent_cls, enforce):
        ref = await backend.create_episode("mock", task.id)
        session = await backend.open_session(ref, "agent")
        agent = agent_cls(AgentContext(task=task, domain="mock", policy="", tools=[]))
        orchestrator = Orchestrator(
            agent, ChattyUser(), session, None, limits=Limits(max_steps=6), enforce_protocol=enforce
        )
        return await orchestrator.run([])

    assert (await converse(MixedAgent, True)).termination.value == "agent_error"
    lenient = await converse(MixedAgent, False)  # by default the calls simply run
    assert lenient.termination.value == "max_steps" and lenient.messages[3].role == "tool"
    with pytest.raises(EmptyMessageError):
        await converse(SilentAgent, False)


def test_malformed_tool_call_arguments_fail_the_attempt() -> None:
    from tau_mcp.conversation.llm import MalformedToolCall, _parse_arguments

    assert _parse_arguments('{"a": 1}') == {"a": 1} and _parse_arguments("") == {}
    with pytest.raises(MalformedToolCall, match="not valid JSON"):
        _parse_arguments("{oops")
    with pytest.raises(MalformedToolCall, match="not a JSON object"):
        _parse_arguments("[1, 2]")
