"""The diagnosis of failed simulations: one constructed trajectory per category, graded on the
engine, each diagnosed as expected with its evidence checked by value; a passing one gets none."""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from tau_mcp.conversation.messages import ChatMessage, ToolCall, ToolMessage, dump_message
from tau_mcp.grading import Grader
from tau_mcp.grading.db_diff import diff_databases, diff_states
from tau_mcp.grading.diagnosis import CATEGORIES, diagnose, diagnosis_of
from tau_mcp.servers.engine.tasks import Action, Task
from tests.support.engine_backend import EngineBackend
from tests.support.harness import load

pytestmark = pytest.mark.needs_data("mock")


def text(role: str, content: str) -> ChatMessage:
    return ChatMessage(role=role, content=content)


class Script:
    """A trajectory built turn by turn, whose tool calls really run on an engine episode."""

    def __init__(self, backend, ref) -> None:
        self.backend, self.ref = backend, ref
        self.messages: list = [text("assistant", "Hi! How can I help you today?")]

    def say(self, role: str, content: str) -> Script:
        self.messages.append(text(role, content))
        return self

    async def call(self, name: str, requestor: str = "assistant", **arguments) -> Script:
        call_id = f"c{len(self.messages)}"
        role = "user" if requestor == "user" else "assistant"
        self.messages.append(
            ChatMessage(
                role=role,
                tool_calls=[
                    ToolCall(id=call_id, name=name, arguments=arguments, requestor=requestor)
                ],
            )
        )
        [out] = await self.backend.replay(
            self.ref, [{"requestor": requestor, "name": name, "arguments": arguments}], False
        )
        self.messages.append(
            ToolMessage(id=call_id, content=out["output"], requestor=requestor, error=out["error"])
        )
        return self

    def numbered(self) -> list:
        for index, message in enumerate(self.messages):
            message.turn_idx = index
        return self.messages


def with_criteria(task: Task, **changes) -> Task:
    criteria = task.evaluation_criteria.model_copy(update=changes)
    return task.model_copy(update={"evaluation_criteria": criteria})


@pytest.fixture
def mock():
    domain = load("mock")
    return domain, EngineBackend({"mock": domain})


async def _graded(domain, backend, task, build, ending="user_stop", judge=None):
    ref = await backend.create_episode(domain.name, task.id)
    script = Script(backend, ref)
    await build(script)
    info = await Grader(backend, domain, judge).grade(task, script.numbered(), ending, ref)
    return info, info["info"].get("diagnosis")


UPDATE = {"task_id": "task_1", "status": "completed"}


async def test_a_passing_simulation_gets_no_diagnosis(mock):
    domain, backend = mock
    task = domain.task("update_task_1")

    async def build(s):
        s.say("user", "Please complete task_1.")
        await s.call("update_task_status", **UPDATE)
        s.say("assistant", "Done, task_1 is completed.")
        s.say("user", "Thanks ###STOP###")

    info, found = await _graded(domain, backend, task, build)
    assert info["reward"] == 1.0 and found is None and "diagnosis" not in info["info"]


async def test_wrong_arguments_show_the_closest_call_and_the_db_rows(mock):
    domain, backend = mock

    async def build(s):
        s.say("user", "Please complete task_1.")
        await s.call("update_task_status", task_id="task_1", status="pending")
        s.say("assistant", "Done.")
        s.say("user", "Thanks ###STOP###")

    info, d = await _graded(domain, backend, domain.task("update_task_1"), build)
    assert d["category"] == "wrong_arguments" and d["side"] == "agent"
    assert d["failed_components"] == ["DB"]
    [missing] = d["missing_actions"]
    assert missing["action"]["name"] == "update_task_status" and missing["same_tool"] is True
    assert missing["closest_call"]["turn_idx"] == 2
    assert missing["argument_diff"] == [
        {"argument": "status", "got": "pending", "expected": "completed"}
    ]
    assert d["db_diff"] == [
        {
            "db": "agent_db",
            "table": "tasks",
            "id": "task_1",
            "field": "status",
            "got": "pending",
            "expected": "completed",
        }
    ]
    assert d["left_gold_plan"]["turn_idx"] == 2
    assert d["ending"] == {"termination_reason": "user_stop", "kind": "user_stop", "by": "user"}


async def test_wrong_tool_names_the_call_made_instead(mock):
    domain, backend = mock

    async def build(s):
        s.say("user", "Please complete task_1.")
        await s.call("create_task", user_id="user_1", title="task_1 completed")
        s.say("assistant", "Done.")
        s.say("user", "Thanks ###STOP###")

    _, d = await _graded(domain, backend, domain.task("update_task_1"), build)
    assert d["category"] == "wrong_tool" and d["side"] == "agent"
    [missing] = d["missing_actions"]
    assert missing["same_tool"] is False and missing["argument_diff"] is None
    assert missing["closest_call"]["name"] == "create_task"
    assert [w["name"] for w in d["unexpected_writes"]] == ["create_task"]
    # The new task is a record the gold state lacks; task_1 kept its old status.
    rows = {(r["table"], r["id"], r["field"]): r for r in d["db_diff"]}
    assert rows[("tasks", "task_1", "status")]["got"] == "pending"
    assert rows[("tasks", "task_1", "status")]["expected"] == "completed"
    new = [r for r in d["db_diff"] if r["table"] == "tasks" and r["expected"] is None]
    assert (
        len(new) == 1 and new[0]["field"] is None and new[0]["got"]["title"] == "task_1 completed"
    )


async def test_unexpected_write_beside_a_complete_gold_plan(mock):
    domain, backend = mock

    async def build(s):
        s.say("user", "Please complete task_1.")
        await s.call("update_task_status", **UPDATE)
        await s.call("create_task", user_id="user_1", title="Follow-up")
        s.say("assistant", "Done, and I added a follow-up.")
        s.say("user", "Thanks ###STOP###")

    _, d = await _graded(domain, backend, domain.task("update_task_1"), build)
    assert d["category"] == "unexpected_write" and d["side"] == "agent"
    assert d["missing_actions"] == []
    [extra] = d["unexpected_writes"]
    assert extra["name"] == "create_task" and extra["turn_idx"] == 4 and extra["error"] is False
    assert d["left_gold_plan"] == {
        "turn_idx": 4,
        "name": "create_task",
        "reason": "create_task is not in the gold plan",
    }
    fields = {(r["table"], r["id"], r["field"]) for r in d["db_diff"]}
    assert ("users", "user_1", "tasks") in fields or ("users", "user_1", "tasks[1]") in fields


async def test_premature_user_end_after_the_agent_asked(mock):
    domain, backend = mock

    async def build(s):
        s.say("user", "Please complete task_1.")
        await s.call("get_users")
        s.say("assistant", "I will mark task_1 as completed. Shall I proceed?")
        s.say("user", "Yes, go ahead. ###STOP###")

    _, d = await _graded(domain, backend, domain.task("update_task_1"), build)
    assert d["category"] == "premature_user_end" and d["side"] == "user"
    assert d["user_ended_with_write_pending"] is True
    [missing] = d["missing_actions"]
    assert missing["closest_call"] is None and missing["tool_kind"] == "write"
    assert d["left_gold_plan"]["reason"] == "the conversation ended before update_task_status"


async def test_missing_action_when_the_agent_claimed_it_was_done(mock):
    domain, backend = mock

    async def build(s):
        s.say("user", "Please complete task_1.")
        s.say("assistant", "Task_1 is completed now.")
        s.say("user", "Great, thanks. ###STOP###")

    _, d = await _graded(domain, backend, domain.task("update_task_1"), build)
    assert d["category"] == "missing_action" and d["side"] == "agent"
    # The flag is on its own: the user did end with a write pending.
    assert d["user_ended_with_write_pending"] is True
    assert [m["action"]["name"] for m in d["missing_actions"]] == ["update_task_status"]


async def test_db_mismatch_when_every_gold_action_matched(mock):
    domain, backend = mock
    gold = Action(
        action_id="c",
        name="create_task",
        arguments={"user_id": "user_1", "title": "Important Meeting"},
        compare_args=["user_id"],
    )
    task = with_criteria(domain.task("create_task_1"), actions=[gold], reward_basis=["DB"])

    async def build(s):
        s.say("user", "Create my meeting task.")
        await s.call("create_task", user_id="user_1", title="Meeting")
        s.say("assistant", "Created.")
        s.say("user", "Thanks ###STOP###")

    _, d = await _graded(domain, backend, task, build)
    assert d["category"] == "db_mismatch" and d["missing_actions"] == []
    assert d["unexpected_writes"] == []
    [row] = [r for r in d["db_diff"] if r["field"] == "title"]
    assert (row["table"], row["got"], row["expected"]) == ("tasks", "Meeting", "Important Meeting")


async def test_env_assertion_unmet(mock):
    domain, backend = mock
    task = domain.task("update_task_with_history_and_env_assertions")  # basis ENV_ASSERTION

    async def build(s):
        s.say("user", "Anything else?")
        s.say("assistant", "No.")
        s.say("user", "###STOP###")

    _, d = await _graded(domain, backend, task, build)
    assert d["category"] == "env_assertion_unmet" and d["failed_components"] == ["ENV_ASSERTION"]
    [unmet] = d["unmet_env_assertions"]
    assert unmet["func_name"] == "assert_task_status"
    assert unmet["arguments"] == {"task_id": "task_2", "expected_status": "completed"}


async def test_missing_information(mock):
    domain, backend = mock
    task = domain.task("update_task_with_initialization_data")  # DB + COMMUNICATE

    async def build(s):
        s.say("user", "Complete task_2.")
        await s.call("update_task_status", task_id="task_2", status="completed")
        s.say("assistant", "Done.")
        s.say("user", "###STOP###")

    _, d = await _graded(domain, backend, task, build)
    assert d["category"] == "missing_information" and d["failed_components"] == ["COMMUNICATE"]
    assert d["missing_information"] == [
        "The agent acknowledged the previous context",
        "The agent confirmed the task status was updated successfully",
    ]
    assert d["db_diff"] is None  # the DB matched: no snapshots were taken


class RefusingJudge:
    model = "fake-judge"

    async def judge(self, messages, statements):
        return [
            {"nl_assertion": s, "met": False, "justification": f"no sign that {s.lower()}"}
            for s in statements
        ], 0.0


async def test_judge_only(mock):
    domain, backend = mock
    task = with_criteria(domain.task("update_task_1"), reward_basis=["DB", "NL_ASSERTION"])

    async def build(s):
        s.say("user", "Please complete task_1.")
        await s.call("update_task_status", **UPDATE)
        s.say("assistant", "Done.")
        s.say("user", "Thanks ###STOP###")

    _, d = await _graded(domain, backend, task, build, judge=RefusingJudge())
    assert d["category"] == "judge_only" and d["failed_components"] == ["NL_ASSERTION"]
    assert d["failed_nl_assertions"] == [
        {
            "assertion": "The agent confirmed the task status was updated successfully",
            "justification": "no sign that the agent confirmed the task status was updated "
            "successfully",
        }
    ]


@pytest.mark.parametrize(
    ("ending", "category", "side"),
    [
        ("max_steps", "limit_reached", "agent"),
        ("agent_error", "protocol_error", "agent"),
        ("user_error", "protocol_error", "user"),
        ("infrastructure_error", "infrastructure", "infrastructure"),
    ],
)
async def test_endings(mock, ending, category, side):
    domain, backend = mock

    async def build(s):
        s.say("user", "Please complete task_1.")

    info, d = await _graded(domain, backend, domain.task("update_task_1"), build, ending)
    assert info["reward"] == 0.0
    assert (d["category"], d["side"]) == (category, side)
    assert d["ending"]["termination_reason"] == ending
    assert d["db_diff"] is None  # an ending that is not graded never reads the state


async def test_too_many_user_tool_errors_fall_on_the_user(mock):
    domain, backend = mock

    async def build(s):
        s.say("user", "Let me check.")
        for _ in range(3):
            await s.call("dismiss_notification", "user", notification_id="nope")
        await s.call("update_task_status", task_id="task_x", status="completed")

    _, d = await _graded(domain, backend, domain.task("update_task_1"), build, "too_many_errors")
    assert (d["category"], d["side"]) == ("limit_reached", "user")
    assert d["tool_errors"]["user"]["count"] == 3 and d["tool_errors"]["agent"]["count"] == 1
    example = d["tool_errors"]["user"]["examples"][0]
    assert example["name"] == "dismiss_notification" and example["error"].startswith("Error")


def test_other_when_no_rule_applies():
    d = diagnose(None, [], "user_stop", {"reward": 0.0, "reward_breakdown": {}}, {})
    assert d["category"] == "other" and CATEGORIES[-1] == "other"


def test_infrastructure_records_are_diagnosed_on_reading():
    sim = {"termination_reason": "infrastructure_error", "info": {"error": "TimeoutError: x"}}
    d = diagnosis_of(sim)
    assert d["category"] == "infrastructure" and "TimeoutError: x" in d["summary"]
    assert diagnosis_of({"termination_reason": "user_stop", "reward_info": {"reward": 1.0}}) is None


def test_db_diff_tables_of_lists_and_single_records():
    final = {
        "bills": [{"bill_id": "B1", "total": 5}, {"bill_id": "B2", "total": 7}],
        "device": {"airplane_mode": True, "apn": {"name": "x"}},
    }
    gold = {
        "bills": [{"bill_id": "B1", "total": 5}, {"bill_id": "B2", "total": 9}],
        "device": {"airplane_mode": False, "apn": {"name": "internet"}},
    }
    rows = diff_databases(final, gold, "user_db")
    assert [(r["table"], r["id"], r["field"], r["got"], r["expected"]) for r in rows] == [
        ("bills", "B2", "total", 7, 9),
        ("device", None, "airplane_mode", True, False),
        ("device", None, "apn.name", "x", "internet"),
    ]
    many = {"t": {f"k{i}": {"id": f"k{i}", "v": i} for i in range(50)}}
    shown, more = diff_states({"agent_db": many}, {"agent_db": {"t": {}}}, limit=10)
    assert len(shown) == 10 and more == 40


@pytest.mark.needs_data("telecom")
async def test_telecom_user_side_evidence():
    domain = load("telecom")
    backend = EngineBackend({"telecom": domain})
    task = domain.task(
        "[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"
    )

    async def build(s):
        s.say("user", "My mobile data does not work.")
        s.say("assistant", "Please turn airplane mode off.")
        await s.call("toggle_airplane_mode", "user")
        s.say("user", "Done. Thanks! ###STOP###")

    info, d = await _graded(domain, backend, task, build)
    assert info["reward"] == 0.0
    assert d["category"] == "missing_action" and d["side"] == "agent"
    assert [m["action"]["name"] for m in d["missing_actions"]] == ["toggle_roaming"]
    assert d["missing_actions"][0]["action"]["requestor"] == "user"
    assert {a["func_name"] for a in d["unmet_env_assertions"]} >= {"assert_mobile_data_status"}
    rows = {(r["db"], r["table"], r["field"]): r for r in d["db_diff"]}
    assert rows[("user_db", "device", "roaming_enabled")]["got"] is False
    assert rows[("user_db", "device", "roaming_enabled")]["expected"] is True


def test_evaluate_diagnoses_what_it_regrades(mock, tmp_path, monkeypatch):
    from tau_mcp.harness.cli import app

    domain, backend = mock
    task = domain.task("update_task_1")

    async def build() -> Script:
        script = Script(backend, await backend.create_episode("mock", task.id))
        script.say("user", "Please complete task_1.")
        await script.call("update_task_status", task_id="task_1", status="pending")
        return script.say("assistant", "Done.").say("user", "Thanks ###STOP###")

    script = asyncio.run(build())
    sim = {
        "id": "s1",
        "task_id": task.id,
        "trial": 0,
        "termination_reason": "user_stop",
        "reward_info": None,
        "messages": [dump_message(m) for m in script.numbered()],
    }
    source = tmp_path / "in.json"
    source.write_text(json.dumps({"info": None, "tasks": [], "simulations": [sim]}))
    out = tmp_path / "out.json"
    monkeypatch.setenv("TAU2_DATA_DIR", str(domain.data_dir))
    result = CliRunner().invoke(
        app,
        ["evaluate", "--domain", "mock", "--input", str(source), "--save-to", str(out)],
    )
    assert result.exit_code == 0, result.output
    [graded] = json.loads(out.read_text())["simulations"]
    d = graded["reward_info"]["info"]["diagnosis"]
    assert d["category"] == "wrong_arguments"
    assert d["db_diff"][0]["field"] == "status"


async def test_calls_of_the_tasks_own_history_are_not_held_against_the_agent(mock):
    from tau_mcp.conversation.messages import history_messages

    domain, backend = mock
    task = domain.task("update_task_with_message_history")  # the history creates task_2
    ref = await backend.create_episode("mock", task.id)
    script = Script(backend, ref)
    script.messages = history_messages(task)
    script.say("user", "Now please mark it completed.")
    script.say("assistant", "It is completed.")
    script.say("user", "Thanks ###STOP###")
    info = await Grader(backend, domain).grade(task, script.numbered(), "user_stop", ref)
    d = info["info"]["diagnosis"]
    assert d["unexpected_writes"] == [] and d["tool_errors"]["agent"]["count"] == 0
    assert d["category"] == "missing_action"
    assert [m["action"]["name"] for m in d["missing_actions"]] == ["update_task_status"]
    assert d["left_gold_plan"]["reason"] == "the conversation ended before update_task_status"


async def test_a_repeated_gold_write_is_an_unexpected_write(mock):
    domain, backend = mock
    meeting = {"user_id": "user_1", "title": "Important Meeting"}

    async def build(s):
        s.say("user", "Create my meeting task.")
        await s.call("create_task", **meeting)
        await s.call("create_task", **meeting)
        s.say("assistant", "Created.")
        s.say("user", "Thanks ###STOP###")

    _, d = await _graded(domain, backend, domain.task("create_task_1"), build)
    assert d["category"] == "unexpected_write" and d["missing_actions"] == []
    [again] = d["unexpected_writes"]
    assert (again["name"], again["turn_idx"]) == ("create_task", 4)
    assert (
        d["left_gold_plan"]["reason"] == "create_task was called again (the gold plan has it once)"
    )
    extra = [r for r in d["db_diff"] if r["table"] == "tasks" and r["expected"] is None]
    assert len(extra) == 1 and extra[0]["got"]["title"] == "Important Meeting"


async def test_a_backend_that_cannot_show_state_still_diagnoses(mock):
    """Graders on backends made for grading only (hashes and assertions) skip the DB rows."""
    domain, backend = mock

    class GradingOnly:
        hashes = backend.hashes
        assertions = backend.assertions

    task = domain.task("update_task_1")
    ref = await backend.create_episode("mock", task.id)
    script = Script(backend, ref)
    script.say("user", "Please complete task_1.").say("assistant", "Done.")
    info = await Grader(GradingOnly(), domain).grade(task, script.numbered(), "user_stop", ref)
    d = info["info"]["diagnosis"]
    assert info["db_check"]["db_match"] is False
    assert d["category"] == "missing_action" and d["db_diff"] is None


# --- issue 31 item 5: a call that met a gold action is no evidence against another ---------------


async def test_a_matched_call_is_not_wrong_arguments_for_another_gold_action(mock):
    domain, backend = mock
    task = with_criteria(
        domain.task("update_task_1"),
        actions=[
            Action(action_id="a", name="update_task_status", arguments=UPDATE),
            Action(
                action_id="b",
                name="update_task_status",
                arguments={"task_id": "task_1", "status": "pending"},
            ),
        ],
    )

    async def build(s):
        s.say("user", "Please complete task_1, then set it back to pending.")
        await s.call("update_task_status", **UPDATE)
        s.say("assistant", "Done.")
        s.say("user", "Thanks ###STOP###")

    _, d = await _graded(domain, backend, task, build)
    assert d["category"] == "missing_action", d["summary"]
    [missing] = d["missing_actions"]
    assert missing["action"]["action_id"] == "b"
    assert missing["closest_call"] is None and missing["argument_diff"] is None
    assert d["summary"] == "Gold action(s) never performed: update_task_status."


@pytest.mark.needs_data("airline")
async def test_airline_task_7_a_right_lookup_is_not_blamed():
    """The probe's case: `play --domain airline --task-id 7`, the agent looks up XEHM4B (a gold
    action) and stops; the gold lookup of 59XX6W is missing, not called with wrong arguments."""
    domain = load("airline")
    backend = EngineBackend({"airline": domain})
    task = domain.task("7")

    async def build(s):
        s.say("user", "Hi, I need help with my reservations.")
        await s.call("get_reservation_details", reservation_id="XEHM4B")
        s.say("assistant", "hello there")

    _, d = await _graded(domain, backend, task, build, ending="agent_stop")
    assert d["category"] == "missing_action", d["summary"]
    lookup = next(
        m for m in d["missing_actions"] if m["action"]["name"] == "get_reservation_details"
    )
    assert lookup["action"]["arguments"] == {"reservation_id": "59XX6W"}
    assert lookup["closest_call"] is None
    assert "XEHM4B" not in d["summary"] and "wrong" not in d["summary"]
