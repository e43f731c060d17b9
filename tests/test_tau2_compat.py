"""A tau2 user's commands, unchanged: the reference's command names and option spellings, its
task filtering for the gt and solo agents, and one sentence for what tau-mcp does not have."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support.data import DATA_DIR, DEMO_DIR
from tests.support.fake_llm_server import FakeLLMServer, call, text

cli = CliRunner()


def _invoke(*args: str):
    return cli.invoke(app, list(args), env={"COLUMNS": "200"})


def _model(fake: FakeLLMServer, name: str) -> list[str]:
    return ["--agent-llm", f"openai/{name}", "--agent-llm-args", json.dumps(fake.llm_args())]


# --- the gt and solo agents on a whole split ----------------------------------------------------
@pytest.mark.needs_data("mock")
def test_gt_runs_the_tasks_it_can_and_says_how_many_it_left_out(tmp_path, fake):
    fake.respond("gt-model", lambda body: text("I have done everything you asked."))
    out = tmp_path / "gt.json"
    result = _invoke(
        "run", "-d", "mock", "--agent", "llm_agent_gt", "--user", "scripted",
        *_model(fake, "gt-model"), "--judge-llm", "none", "--data-dir", str(DATA_DIR),
        "--save-to", str(out), "--max-retries", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert (
        "running 8 of 10 tasks: the gt agent cannot run 2 (2 have no gold actions: "
        "create_task_1_nl_eval, update_task_with_history_and_env_assertions)"
    ) in " ".join(result.output.split())
    document = json.loads(out.read_text())
    left_out = document["info"]["filtered_tasks"]
    assert left_out["agent"] == "gt" and (left_out["selected"], left_out["run"]) == (10, 8)
    assert left_out["by_reason"] == {
        "no gold actions": ["create_task_1_nl_eval", "update_task_with_history_and_env_assertions"]
    }
    assert len(document["tasks"]) == 8
    sims = document["simulations"]
    assert len(sims) == 8 and all(s["termination_reason"] != "infrastructure_error" for s in sims)


@pytest.mark.needs_data("mock")
def test_gt_on_only_tasks_it_cannot_run_is_one_sentence(tmp_path):
    out = tmp_path / "none.json"
    # a key for the gt agent's model: it is checked before the tasks are read (issue 31 item 15)
    result = cli.invoke(
        app,
        ["run", "-d", "mock", "--agent", "gt", "--user", "scripted", "--data-dir", str(DATA_DIR),
         "--task-ids", "create_task_1_nl_eval", "--save-to", str(out)],
        env={"COLUMNS": "200", "OPENAI_API_KEY": "sk-not-used"},
    )  # fmt: skip
    assert result.exit_code == 1
    assert "the gt agent cannot run any of the 1 selected tasks" in result.output
    assert "Traceback" not in result.output and not out.exists()


def test_solo_leaves_out_what_it_cannot_run_and_a_resume_says_what_it_kept(tmp_path, fake):
    fake.respond("solo-model", lambda body: call("done"))
    out = tmp_path / "solo.json"
    args = (
        "run", "--domain", "mock", "--agent", "llm_agent_solo", "--user", "dummy_user",
        *_model(fake, "solo-model"), "--judge-llm", "none", "--data-dir", str(DEMO_DIR),
        "--save-to", str(out), "--max-retries", "0",
    )  # fmt: skip
    result = _invoke(*args)
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert (
        "running 4 of 5 tasks: the solo agent cannot run 1 (1 has a starting history with the "
        "customer's messages: demo_history)"
    ) in flat
    document = json.loads(out.read_text())
    assert [s["termination_reason"] for s in document["simulations"]] == ["agent_stop"] * 4
    assert document["info"]["filtered_tasks"]["by_reason"] == {
        "a starting history with the customer's messages": ["demo_history"]
    }
    again = _invoke(*args)
    assert again.exit_code == 0, again.output
    assert f"resuming {out}: kept 4 finished simulations, 0 to run" in " ".join(
        again.output.split()
    )


# --- run: the reference's spellings -------------------------------------------------------------
def test_run_takes_the_reference_spellings(tmp_path):
    out = tmp_path / "spelled.json"
    result = _invoke(
        "run", "-d", "mock", "--agent", "oracle", "--user", "scripted", "--data-dir",
        str(DEMO_DIR), "--task-split-name", "base", "--task-ids", "demo_create", "demo_complete",
        "--auto-resume", "--user-persona", '{"verbosity": {"minimal": 0.8, "standard": 0.2}}',
        "--speech-complexity", "regular", "--tick-duration=0.2", "--xml-prompt",
        "--verbose-logs", "--log-level", "ERROR", "--retry-delay", "0", "--save-to", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())
    assert "note: --verbose-logs ignored" in flat
    assert "note: --speech-complexity, --tick-duration, --xml-prompt ignored" in flat
    assert [s["task_id"] for s in json.loads(out.read_text())["simulations"]] == [
        "demo_create",
        "demo_complete",
    ]


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["--audio-native"], "tau-mcp has no voice (full-duplex) mode; drop --audio-native"),
        (["--num-trails", "2"], "no such option: --num-trails; did you mean --num-trials?"),
        (["--user-persona", "[1]"], "--user-persona must be a JSON object"),
        (["--log-level", "LOUD"], "--log-level is one of DEBUG, INFO"),
    ],
)
def test_what_run_cannot_honour_is_one_sentence(tmp_path, args, sentence):
    base = ["run", "-d", "mock", "--agent", "oracle", "--user", "scripted"]
    result = _invoke(
        *base, "--data-dir", str(DEMO_DIR), "--save-to", str(tmp_path / "x.json"), *args
    )
    assert result.exit_code == 1 and sentence in " ".join(result.output.split())
    assert "Traceback" not in result.output and not (tmp_path / "x.json").exists()


def test_voice_agent_is_refused():
    result = _invoke("run", "-d", "mock", "--agent", "discrete_time_audio_native_agent")
    assert result.exit_code == 1 and "no voice (full-duplex) mode" in result.output


def test_timeout_ends_a_simulation_as_the_reference_does(tmp_path):
    out = tmp_path / "timeout.json"
    result = _invoke(
        "run", "-d", "mock", "--agent", "oracle", "--user", "scripted", "--data-dir",
        str(DEMO_DIR), "--task-ids", "demo_create", "--timeout", "0", "--save-to", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    (sim,) = document["simulations"]
    assert sim["termination_reason"] == "timeout" and sim["reward_info"]["reward"] == 0.0
    assert document["info"]["timeout"] == 0.0


# --- the reference's other commands --------------------------------------------------------------
@pytest.fixture
def demo_run(tmp_path) -> Path:
    out = tmp_path / "demo.json"
    result = _invoke(
        "run", "-d", "mock", "--agent", "oracle", "--user", "scripted", "--data-dir",
        str(DEMO_DIR), "--timeout", "0", "--task-ids", "demo_create", "--save-to", str(out),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


def test_view_with_the_reference_options(demo_run):
    result = _invoke("view", "--file", str(demo_run), "--only-show-failed", "--expanded-ticks")
    assert result.exit_code == 0, result.output
    assert "demo_create" in result.output
    listed = _invoke("view", "--dir", str(demo_run.parent))
    assert listed.exit_code == 0 and demo_run.name in listed.output


def test_evaluate_trajs_regrades_files_and_writes_updated_copies(demo_run, tmp_path):
    out_dir = tmp_path / "updated"
    result = _invoke(
        "evaluate-trajs", str(demo_run), "-o", str(out_dir), "--data-dir", str(DEMO_DIR)
    )
    assert result.exit_code == 0, result.output
    updated = json.loads((out_dir / f"updated_{demo_run.name}").read_text())
    assert updated["simulations"][0]["reward_info"]["reward"] == 0.0
    # Embedded tasks that differ from the data folder's: refused, unless --fresh-tasks.
    document = json.loads(demo_run.read_text())
    document["tasks"][0]["description"] = {"purpose": "edited after the run"}
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    refused = _invoke("evaluate-trajs", str(edited), "--data-dir", str(DEMO_DIR))
    assert refused.exit_code == 1 and "pass --fresh-tasks" in " ".join(refused.output.split())
    fresh = _invoke("evaluate-trajs", str(edited), "--fresh-tasks", "--data-dir", str(DEMO_DIR))
    assert fresh.exit_code == 0, fresh.output
    missing = _invoke("evaluate-trajs", str(tmp_path / "nope.json"))
    assert missing.exit_code == 1 and "no results files found" in missing.output


def test_check_data_is_data_verify():
    verify = _invoke("data", "verify", "--data-dir", str(DEMO_DIR))
    check = _invoke("check-data", "--data-dir", str(DEMO_DIR))
    assert (check.exit_code, check.output) == (verify.exit_code, verify.output)


def test_domain_intro_and_verify_trajs(demo_run):
    shown = _invoke("domain", "mock", "--data-dir", str(DEMO_DIR))
    assert shown.exit_code == 0, shown.output
    assert "create_task(user_id: string, title: string" in shown.output and "policy" in shown.output
    intro = _invoke("intro")
    assert intro.exit_code == 0 and "tau2 evaluate-trajs" in intro.output
    checked = _invoke("submit", "verify-trajs", str(demo_run), "--data-dir", str(DEMO_DIR))
    assert checked.exit_code == 1 and "[min-trials]" in checked.output


@pytest.mark.e2e
def test_start_serves_every_domain(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "TAU2_DATA_DIR": str(DEMO_DIR)}
    code = "from tau_mcp.harness.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "start", "--domains", "mock", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    assert json.loads(r.read())["domains"] == ["mock"]
                    break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "tau-harness start did not come up"
                time.sleep(0.3)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
