"""Issue 33, item 4: who was the user, and which failures the simulated user may have caused.

Each flag of `grading.simulator_flags` is checked on a trajectory shaped like the real ones it
names (tool calls really run on an engine episode, graded by the grader): a user that hangs up
as it confirms a cancellation (retail), one that says it was transferred when it was not
(airline), one that changes its phone's settings on its own (telecom), one that reads out its
instructions (airline), and an empty user turn asked again (a fake-model run, then the report).
The results header records the user simulator's identity.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import tau_mcp
from tau_mcp.grading import Grader
from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig
from tau_mcp.simulator.llm_user import EMPTY_TURN_REMINDER
from tests.support.data import DATA_DIR
from tests.support.engine_backend import EngineBackend
from tests.support.fake_llm_server import text
from tests.support.harness import load
from tests.support.replay import AGENT, USER, model_args, script_models
from tests.test_diagnosis import Script

AIRLINE_TASK = "7"  # cancel two reservations; its instructions say how to insist (29 words)


async def _flags(domain_name: str, task_id: str, build) -> tuple[dict, list[dict]]:
    domain = load(domain_name)
    backend = EngineBackend({domain_name: domain})
    task = domain.task(task_id)
    ref = await backend.create_episode(domain.name, task.id)
    script = Script(backend, ref)
    await build(script, task)
    info = await Grader(backend, domain, None).grade(task, script.numbered(), "user_stop", ref)
    diagnosis = info["info"]["diagnosis"]
    return diagnosis, diagnosis["user_simulator_flags"]


@pytest.mark.needs_data("retail")
async def test_a_stop_right_after_the_agent_asked_to_confirm_a_write():
    async def build(s: Script, task) -> None:
        s.say("user", "Hi, I want to cancel one of my pending orders.")
        for action in task.evaluation_criteria.actions:  # the look-ups, as the agent makes them
            if action.name != "cancel_pending_order":
                await s.call(action.name, **action.arguments)
        s.say(
            "assistant",
            "I can cancel that order for you; the refund goes to your original payment method. "
            "Do you confirm the cancellation (yes/no)?",
        )
        s.say("user", "Yes, please go ahead. ###STOP###")

    diagnosis, flags = await _flags("retail", "66", build)
    assert diagnosis["category"] == "premature_user_end"
    (flag,) = flags
    assert flag["flag"] == "stop_after_confirmation_request"
    assert flag["turn_idx"] == diagnosis["left_gold_plan"]["turn_idx"]  # the stop itself
    assert "cancel_pending_order was pending" in flag["evidence"]


@pytest.mark.needs_data("airline")
async def test_a_transfer_the_agent_never_made():
    async def build(s: Script, task) -> None:
        s.say("user", "I want to cancel reservations XEHM4B and 59XX6W.")
        await s.call("get_reservation_details", reservation_id="XEHM4B")
        s.say("assistant", "I am sorry, this reservation cannot be cancelled under our policy.")
        s.say("user", "###TRANSFER###")

    _, flags = await _flags("airline", AIRLINE_TASK, build)
    assert [f["flag"] for f in flags] == ["against_instructions"]
    assert "made no transfer" in flags[0]["evidence"]

    async def transferred(s: Script, task) -> None:
        s.say("user", "I want to cancel reservations XEHM4B and 59XX6W.")
        await s.call("transfer_to_human_agents", summary="cancellation request")
        s.say("assistant", "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.")
        s.say("user", "###TRANSFER###")

    _, flags = await _flags("airline", AIRLINE_TASK, transferred)
    assert flags == []


@pytest.mark.needs_data("telecom")
async def test_a_user_write_no_gold_action_asks_for():
    task_id = "[mobile_data_issue]airplane_mode_on|user_abroad_roaming_enabled_off[PERSONA:None]"

    async def build(s: Script, task) -> None:
        s.say("user", "My mobile data does not work.")
        s.say("assistant", "Please turn airplane mode off.")
        await s.call("toggle_airplane_mode", "user")
        await s.call("toggle_wifi", "user")  # not asked for by anyone
        s.say("user", "Done. Thanks! ###STOP###")

    diagnosis, flags = await _flags("telecom", task_id, build)
    (flag,) = [f for f in flags if f["flag"] == "against_instructions"]
    assert "toggle_wifi" in flag["evidence"] and flag["turn_idx"] is not None


@pytest.mark.needs_data("airline")
async def test_instructions_read_out_word_for_word():
    domain = load("airline")
    instructions = domain.task(AIRLINE_TASK).user_scenario["instructions"]["task_instructions"]
    leaked = " ".join(instructions.split()[:14])

    async def build(s: Script, task) -> None:
        s.say("user", f"Hello. {leaked}")
        s.say("assistant", "How can I help with your reservation?")
        s.say("user", "I would like to cancel XEHM4B and 59XX6W, please. ###STOP###")

    _, flags = await _flags("airline", AIRLINE_TASK, build)
    (flag,) = [f for f in flags if f["flag"] == "scenario_leaked"]
    assert flag["turn_idx"] == 1 and "word for word" in flag["evidence"]

    async def own_words(s: Script, task) -> None:  # the reason restated: no leak
        s.say("user", "Hi, I want to cancel my upcoming flights, reservations XEHM4B and 59XX6W.")
        s.say("assistant", "How can I help with your reservation?")
        s.say("user", "Please cancel them. ###STOP###")

    _, flags = await _flags("airline", AIRLINE_TASK, own_words)
    assert not [f for f in flags if f["flag"] == "scenario_leaked"]


@pytest.mark.needs_data("mock")
def test_an_empty_user_turn_is_asked_again_counted_flagged_and_reported(fake, tmp_path):
    script_models(fake)
    seen = []

    def user(body: dict) -> dict:
        seen.append(body["messages"][0]["content"])
        if len(seen) == 1:
            return text("")  # the model's first answer is empty
        return text("Please mark task_1 as completed. ###STOP###")

    fake.respond(USER, user)
    args = model_args(fake)
    path = tmp_path / "run.json"
    tau_mcp.run(
        RunConfig(
            domain="mock",
            data_dir=DATA_DIR,
            task_ids=["update_task_1"],
            agent_llm=f"openai/{AGENT}",
            agent_llm_args=args,
            user_llm=f"openai/{USER}",
            user_llm_args={**args, "api_key": "sk-secret-value-1234"},
            judge_llm="none",
            max_retries=0,
            save_to=path,
        )
    )
    assert seen[1].endswith(EMPTY_TURN_REMINDER) and not seen[0].endswith(EMPTY_TURN_REMINDER)
    document = json.loads(path.read_text())
    (sim,) = document["simulations"]
    first_user = next(m for m in sim["messages"] if m["role"] == "user")
    assert first_user["content"].startswith("Please mark")
    assert first_user["raw_data"]["empty_retries"] == 1
    diagnosis = sim["reward_info"]["info"]["diagnosis"]
    (flag,) = [f for f in diagnosis["user_simulator_flags"] if f["flag"] == "empty_user_turn"]
    assert flag["count"] == 1 and flag["turn_idx"] == first_user["turn_idx"]

    # Who the user was: kind, version, model, args less secrets, prompt hashes.
    who = document["info"]["user_simulator"]
    assert who["implementation"] == "llm" and who["version"] == "2"
    assert who["model"] == f"openai/{USER}" and "api_key" not in who["llm_args"]
    assert len(who["prompt_sha256"]) == len(who["guidelines_sha256"]) == 64

    report = CliRunner().invoke(app, ["report", str(path), "--format", "json"])
    run = json.loads(report.stdout)["runs"][0]
    assert run["user_simulator_flags"]["empty_turns_retried"] == 1
    assert run["user_simulator_flags"]["by_flag"]["empty_user_turn"] == 1
    without = run["pass_hat_excluding_simulator_flags"]
    assert without["excluded"] == 1 and without["pass_hat"] == {}  # its one trial left out
    assert run["pass_hat"]["1"]["value"] == 0.0
    md = CliRunner().invoke(app, ["report", str(path), "--format", "md"]).stdout
    assert "**Diagnostic, not the score:** pass^k with the 1 failure(s) the user simulator" in md
    assert "Empty user turns asked again: 1." in md


@pytest.mark.needs_data("mock")
def test_an_empty_user_turn_twice_fails_the_attempt(fake, tmp_path):
    script_models(fake)
    fake.respond(USER, lambda body: text(""))
    args = model_args(fake)
    results = tau_mcp.run(
        RunConfig(
            domain="mock",
            data_dir=DATA_DIR,
            task_ids=["update_task_1"],
            agent_llm=f"openai/{AGENT}",
            agent_llm_args=args,
            user_llm=f"openai/{USER}",
            user_llm_args=args,
            judge_llm="none",
            max_retries=0,
        )
    )
    (sim,) = results.simulations
    assert sim["termination_reason"] == "infrastructure_error"
    assert "the user produced an empty message" in sim["info"]["error"]
    assert len(fake.requests[USER]) == 2  # asked once again, not more
