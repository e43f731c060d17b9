"""`tau-harness play` driven through a pseudo-terminal, as a person would use it."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

pexpect = pytest.importorskip("pexpect", reason="the play test drives a pseudo-terminal (pexpect)")

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "data" / "demo"


def _spawn(args: list[str], tmp_path: Path):
    exe = shutil.which("tau-harness") or ""
    command, argv = (exe, args) if exe else (sys.executable, ["-m", "tau_mcp.harness", *args])
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "200"}
    env.pop("TAU2_DATA_DIR", None)
    return pexpect.spawn(
        command,
        argv,
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )


def _play_demo_as_agent(saved: Path) -> list[str]:
    """`play` as the agent of the demo's create task, against the scripted customer."""
    return [
        "play", "--domain", "mock", "--task-id", "demo_create", "--user", "scripted",
        "--data-dir", str(DEMO), "--save-to", str(saved),
    ]  # fmt: skip


def test_person_plays_the_agent_and_is_graded(tmp_path):
    saved = tmp_path / "played.json"
    child = _spawn(_play_demo_as_agent(saved), tmp_path)
    child.expect("create_task\\(user_id: string, title: string")  # tools with parameters
    # The scripted customer speaks as a customer: in the first person (issue 31 item 14).
    child.expect_exact("customer: Hi! I am Chidi Okafor (user id chidi). I want a new to-do item")
    child.expect("agent> ")
    child.sendline("create_task(user_id='chidi', title=\"Book flights to Lagos\")")
    child.expect("result: ")
    child.expect("Book flights to Lagos")
    child.expect("agent> ")
    child.sendline("Done: your item is on the list.")
    # ... and stays after the agent's words, until asked whether it needs anything else.
    child.expect_exact("customer: Okay. Is there anything else you need from me?")
    child.expect("agent> ")
    child.sendline("No. Is there anything else I can help with?")
    child.expect_exact("customer: No, that is all. Thank you! [ends the conversation]")
    child.expect("ending: user_stop - reward: 1.0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    sims = json.loads(saved.read_text())["simulations"]
    assert len(sims) == 1 and sims[0]["reward_info"]["reward"] == 1.0
    calls = [c for m in sims[0]["messages"] for c in (m.get("tool_calls") or [])]
    assert calls[0]["name"] == "create_task"
    assert calls[0]["arguments"] == {"user_id": "chidi", "title": "Book flights to Lagos"}


def test_a_robustness_game_shows_the_fault_and_the_retry_goes_through(tmp_path):
    """`play --faults` (docs/faults.md): the person's tool call meets the injected fault as the
    tool's own error, the same call again goes through, and the saved record lists the fault."""
    saved = tmp_path / "played.json"
    child = _spawn([*_play_demo_as_agent(saved), "--faults", "transient=1"], tmp_path)
    child.expect("agent> ")
    call = "create_task(user_id='chidi', title=\"Book flights to Lagos\")"
    child.sendline(call)
    child.expect_exact("result (error): Error: Service temporarily unavailable (HTTP 503)")
    child.expect("agent> ")
    child.sendline(call)
    child.expect("result: ")
    child.expect("Book flights to Lagos")
    child.expect("agent> ")
    child.sendline("Done. Is there anything else I can help with?")
    child.expect("ending: user_stop - reward: 1.0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    document = json.loads(saved.read_text())
    assert document["info"]["faults"]["spec"] == "transient=1"
    faults = document["simulations"][0]["info"]["faults"]
    assert [(f["tool"], f["kind"]) for f in faults] == [("create_task", "transient")]


def test_json_call_bad_input_and_a_lost_game(tmp_path):
    child = _spawn(
        [
            "play",
            "--domain",
            "mock",
            "--task-id",
            "demo_create",
            "--user",
            "scripted",
            "--data-dir",
            str(DEMO),
        ],
        tmp_path,
    )
    child.expect("agent> ")
    child.sendline('{"name": "create_task", "arguments": ')
    child.expect("not valid JSON")
    child.expect("agent> ")
    child.sendline("create_task('chidi')")
    child.expect("give arguments by name")
    child.expect("agent> ")
    child.sendline('{"name": "create_task", "arguments": {"user_id": "chidi", "title": "Wrong"}}')
    child.expect("result: ")
    child.expect("agent> ")
    child.sendline("All set.")
    child.expect("agent> ")
    child.sendline("/stop")
    child.expect("ending: agent_stop - reward: 0.0")
    child.expect("db_match")
    child.expect(pexpect.EOF)


def test_mistyped_calls_are_refused_and_asked_again(tmp_path):
    """A call the person mistypes (unknown tool, wrong or missing argument, bad syntax) is refused
    with the reason and the prompt comes back; it never reaches the customer as chat, so the
    game goes on and is won. The customer's last words are shown before the grade."""
    saved = tmp_path / "played.json"
    child = _spawn(_play_demo_as_agent(saved), tmp_path)
    refused = {
        "create_tsk(user_id='chidi', title='Book flights to Lagos')": (
            "no tool named 'create_tsk' on your side; did you mean create_task?"
        ),
        "create_task(userid='chidi', title='Book flights to Lagos')": (
            "create_task takes no argument 'userid'"
        ),
        "create_task(user_id='chidi')": "create_task needs 'title'",
        "create_task(user_id='chidi', title='Book flights to Lagos'": "not sent",
        "/sya hello": "unknown command /sya",
    }
    child.expect("agent> ")
    for line, reason in refused.items():
        child.sendline(line)
        child.expect_exact(reason)
        child.expect("agent> ")
    child.sendline("create_task(user_id='chidi', title=\"Book flights to Lagos\")")
    child.expect("result: ")
    child.expect("agent> ")
    child.sendline("Done: your item is on the list.")
    child.expect("agent> ")
    child.sendline("Thanks for calling. Anything else?")
    child.expect_exact("customer: No, that is all. Thank you! [ends the conversation]")
    child.expect("ending: user_stop - reward: 1.0")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    (sim,) = json.loads(saved.read_text())["simulations"]
    sent = [m for m in sim["messages"] if m["role"] == "assistant"]
    # Only the greeting, the one good call and the two closing lines went out.
    assert [bool(m.get("tool_calls")) for m in sent] == [False, True, False, False]
    assert not any("create_tsk" in (m.get("content") or "") for m in sim["messages"])


def test_unknown_task_is_one_sentence(tmp_path):
    child = _spawn(
        ["play", "--domain", "mock", "--task-id", "nope", "--data-dir", str(DEMO)], tmp_path
    )
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus != 0
    assert "unknown task id" in child.before and "Traceback" not in child.before


def test_person_plays_the_user_with_their_own_tools(tmp_path):
    child = _spawn(
        [
            "play",
            "--domain",
            "mock",
            "--task-id",
            "demo_notice",
            "--as",
            "user",
            "--agent",
            "oracle",
            "--data-dir",
            str(DEMO),
        ],
        tmp_path,
    )
    child.expect("Your scenario")
    child.expect("you> ")
    child.sendline("check_notifications()")
    child.expect("note_1")
    child.expect("you> ")
    child.sendline("dismiss_notification(notification_id='note_1')")
    child.expect("result")
    child.expect("you> ")
    child.sendline("The chairs were ordered; please mark task_1 completed.")
    child.expect("ending: agent_stop - reward: 1.0")
    child.expect(pexpect.EOF)
