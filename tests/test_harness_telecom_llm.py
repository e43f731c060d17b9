"""Telecom end to end with the llm agent and the llm user through real litellm over HTTP.

A scripted fake model server on 127.0.0.1 plays both models. The user model calls telecom's
user tools (the phone) on the episode's user MCP endpoint and the agent model calls the agent
tools; the run is graded on the server (env assertions on both sides) and the saved results
file is then read back by `tau-harness view` and re-graded by `tau-harness evaluate`.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tests.support.data import DATA_DIR
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.harness import load, mcp_backend

pytestmark = pytest.mark.needs_data("telecom")

AGENT, USER = "telecom-agent-model", "telecom-user-model"
# The user cannot send MMS: the messaging app lacks its storage permission and the line is
# over its data allowance. Gold: the user grants the permission, the agent refuels 2 GB.
TASK = "[mms_issue]break_app_storage_permission|data_usage_exceeded[PERSONA:Easy]"
PHONE = "555-123-2002"


def _agent_script(fake: FakeLLMServer) -> None:
    fake.script(
        AGENT,
        call("get_customer_by_phone", phone_number=PHONE),
        text("Thanks John. Could you look at your status bar and tell me what it shows?"),
        call("refuel_data", customer_id="C1001", line_id="L1002", gb_amount=2.0),
        text(
            "I added 2 GB of data to your line. Please also grant your messaging app the "
            "storage permission, then try sending an MMS."
        ),
    )


def _config(fake: FakeLLMServer, save_to=None) -> RunConfig:
    return fake.run_config("telecom", TASK, AGENT, USER, save_to=save_to)


async def _run(fake: FakeLLMServer, save_to=None) -> dict:
    domain = load("telecom")
    async with mcp_backend(domain) as backend:
        results = await Runner(SimulationRunner(backend, domain, _config(fake, save_to))).run()
    (sim,) = results.simulations
    return sim


def _shape(sim: dict) -> list[tuple]:
    """(role, requestor of a tool result, names of the tools called) per message."""
    out = []
    for m in sim["messages"]:
        calls = tuple(c["name"] for c in m.get("tool_calls") or [])
        out.append((m["role"], m.get("requestor"), calls))
    return out


async def test_telecom_user_tools_solve_the_task(fake: FakeLLMServer):
    fake.script(
        USER,
        text(f"Hi, I can't send picture messages. My number is {PHONE}."),
        call("check_status_bar"),
        text("It shows good signal and 5G, data enabled."),
        call("grant_app_permission", app_name="messaging", permission="storage"),
        call("can_send_mms"),
        text("It works now, thank you! ###STOP###"),
    )
    _agent_script(fake)
    sim = await _run(fake)

    assert sim["termination_reason"] == "user_stop", sim.get("info")
    assert _shape(sim) == [
        ("assistant", None, ()),  # the greeting
        ("user", None, ()),
        ("assistant", None, ("get_customer_by_phone",)),
        ("tool", "assistant", ()),
        ("assistant", None, ()),
        ("user", None, ("check_status_bar",)),
        ("tool", "user", ()),
        ("user", None, ()),
        ("assistant", None, ("refuel_data",)),
        ("tool", "assistant", ()),
        ("assistant", None, ()),
        ("user", None, ("grant_app_permission",)),
        ("tool", "user", ()),
        ("user", None, ("can_send_mms",)),
        ("tool", "user", ()),
        ("user", None, ()),
    ]
    messages = sim["messages"]
    assert [m["turn_idx"] for m in messages] == list(range(len(messages)))
    # Every tool result answers the call just before it, by id and by side.
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            (tc,) = messages[i - 1]["tool_calls"]
            assert m["id"] == tc["id"] and m["requestor"] == tc["requestor"]
            assert m["error"] is False
    assert all(
        tc["requestor"] == "user"
        for m in messages
        if m["role"] == "user"
        for tc in m.get("tool_calls") or []
    )
    assert "Status Bar" in messages[6]["content"]
    assert "Permission 'storage' granted" in messages[12]["content"]
    # The refuel on the agent side already reached the phone (the domain's tool sync).
    mms = messages[14]["content"].lower()
    assert "can send mms" in mms and "cannot" not in mms, mms
    assert sim["info"]["tool_errors"] == 0

    info = sim["reward_info"]
    assert [(c["env_assertion"]["func_name"], c["met"]) for c in info["env_assertions"]] == [
        ("assert_can_send_mms", True),
        ("assert_data_refueling_amount", True),
    ]
    # The reference's gold state for telecom skips the device sync after the gold actions, so
    # its db_check reports a mismatch even for a solved task (DB is not in telecom's reward).
    assert info["db_check"] == {"db_match": False, "db_reward": 0.0}
    assert [c["action_match"] for c in info["action_checks"]] == [True, True]
    assert info["reward_breakdown"] == {"ENV_ASSERTION": 1.0} and info["reward"] == 1.0

    # What each model was sent. The user model plays "assistant": the greeting is the other
    # party's turn, its own tool calls are assistant tool calls, their results tool messages.
    user_requests = fake.requests[USER]
    assert len(user_requests) == 6
    first = user_requests[0]["messages"]
    assert first[1] == {"role": "user", "content": "Hi! How can I help you today?"}
    assert {t["function"]["name"] for t in user_requests[0]["tools"]} >= {
        "check_status_bar",
        "toggle_airplane_mode",
        "grant_app_permission",
        "can_send_mms",
    }
    assert not {"refuel_data", "get_customer_by_phone"} & {
        t["function"]["name"] for t in user_requests[0]["tools"]
    }
    assert "Status Bar" not in first[0]["content"] and PHONE in first[0]["content"]
    after_tool = user_requests[2]["messages"]  # sent right after check_status_bar ran
    assert [m["role"] for m in after_tool] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    status_call = after_tool[4]["tool_calls"][0]
    assert status_call["function"]["name"] == "check_status_bar"
    assert after_tool[5]["tool_call_id"] == status_call["id"] == messages[5]["tool_calls"][0]["id"]
    assert after_tool[5]["content"] == messages[6]["content"]
    # The agent's tool calls and results never reach the user model.
    last_user = user_requests[-1]["messages"]
    assert all(
        tc["function"]["name"] not in ("get_customer_by_phone", "refuel_data")
        for m in last_user
        for tc in m.get("tool_calls") or []
    )
    assert [m["role"] for m in last_user].count("tool") == 3

    # The agent model sees its own calls and results, and only the user's words.
    agent_requests = fake.requests[AGENT]
    assert len(agent_requests) == 4
    last_agent = agent_requests[-1]["messages"]
    assert [m["role"] for m in last_agent] == [
        "system",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert last_agent[2]["content"].startswith("Hi, I can't send picture messages")
    assert last_agent[6]["content"] == "It shows good signal and 5G, data enabled."
    assert not any("Status Bar" in (m.get("content") or "") for m in last_agent)
    assert {t["function"]["name"] for t in agent_requests[0]["tools"]} >= {
        "refuel_data",
        "get_customer_by_phone",
    }
    assert "check_status_bar" not in {t["function"]["name"] for t in agent_requests[0]["tools"]}


async def test_telecom_wrong_user_action_fails_and_user_tool_errors_count(fake: FakeLLMServer):
    fake.script(
        USER,
        text(f"Hi, I can't send picture messages. My number is {PHONE}."),
        call("check_status_bar"),
        text("It shows good signal and 5G, data enabled."),
        call("grant_app_permission", app_name="messaging"),  # no permission: an error
        call("grant_app_permission", app_name="messaging", permission="sms"),
        call("can_send_mms"),
        text("Still no luck, but I have to go. ###STOP###"),
    )
    _agent_script(fake)
    sim = await _run(fake)

    assert sim["termination_reason"] == "user_stop", sim.get("info")
    messages = sim["messages"]
    failed = messages[12]
    assert failed["role"] == "tool" and failed["requestor"] == "user" and failed["error"] is True
    assert failed["content"].startswith("Error: ")
    assert failed["id"] == messages[11]["tool_calls"][0]["id"]
    assert sim["info"]["tool_errors"] == 1
    assert "cannot send mms" in messages[16]["content"].lower(), messages[16]["content"]
    # The failed result went back to the user model as a tool message, like any other.
    retry_request = fake.requests[USER][4]["messages"]
    assert retry_request[-1] == {
        "role": "tool",
        "tool_call_id": messages[11]["tool_calls"][0]["id"],
        "content": failed["content"],
    }

    info = sim["reward_info"]
    assert [(c["env_assertion"]["func_name"], c["met"]) for c in info["env_assertions"]] == [
        ("assert_can_send_mms", False),
        ("assert_data_refueling_amount", True),
    ]
    assert info["db_check"]["db_match"] is False
    assert info["reward_breakdown"] == {"ENV_ASSERTION": 0.0} and info["reward"] == 0.0


def test_telecom_results_file_views_and_regrades_identically(tmp_path):
    out = tmp_path / "telecom.json"
    with FakeLLMServer() as fake:
        fake.script(
            USER,
            text(f"Hi, I can't send picture messages. My number is {PHONE}."),
            call("check_status_bar"),
            text("It shows good signal and 5G, data enabled."),
            call("grant_app_permission", app_name="messaging", permission="storage"),
            call("can_send_mms"),
            text("It works now, thank you! ###STOP###"),
        )
        _agent_script(fake)
        sim = asyncio.run(_run(fake, save_to=out))
    assert sim["reward_info"]["reward"] == 1.0
    document = json.loads(out.read_text())

    cli = CliRunner()
    shown = cli.invoke(app, ["view", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "average reward" in shown.output
    shown = cli.invoke(app, ["view", str(out), "--sim", sim["id"][:8]])
    assert shown.exit_code == 0, shown.output
    assert "check_status_bar" in shown.output and "refuel_data" in shown.output

    regraded_path = tmp_path / "regraded.json"
    result = cli.invoke(
        app,
        [
            "evaluate",
            "--domain",
            "telecom",
            "--input",
            str(out),
            "--save-to",
            str(regraded_path),
            "--judge-llm",
            "none",
            "--data-dir",
            str(DATA_DIR),
        ],
    )
    assert result.exit_code == 0, result.output
    regraded = json.loads(regraded_path.read_text())
    assert [s["reward_info"] for s in regraded["simulations"]] == [
        s["reward_info"] for s in document["simulations"]
    ]

    # Re-grading a copy without the user's grant: the same trajectory otherwise, reward 0.
    broken = json.loads(out.read_text())
    (bsim,) = broken["simulations"]
    drop = {i for i, m in enumerate(bsim["messages"]) if i in (11, 12)}
    assert bsim["messages"][11]["tool_calls"][0]["name"] == "grant_app_permission"
    bsim["messages"] = [m for i, m in enumerate(bsim["messages"]) if i not in drop]
    broken_path = tmp_path / "broken.json"
    broken_path.write_text(json.dumps(broken))
    result = cli.invoke(
        app,
        [
            "evaluate",
            "--domain",
            "telecom",
            "--input",
            str(broken_path),
            "--save-to",
            str(regraded_path),
            "--judge-llm",
            "none",
            "--data-dir",
            str(DATA_DIR),
        ],
    )
    assert result.exit_code == 0, result.output
    (rsim,) = json.loads(regraded_path.read_text())["simulations"]
    assert rsim["reward_info"]["reward"] == 0.0
    assert [c["met"] for c in rsim["reward_info"]["env_assertions"]] == [False, True]
