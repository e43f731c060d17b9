"""Issue 31 item 16, the small things of the two programs' start and their errors: `start --help`
lists `tau-server serve`'s options, `intro` names no file a wheel install lacks, the serve
banner names the MCP paths, a port in use is exit code 1 from both programs, and no error
comes after a blank line."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support.data import DEMO_DIR

cli = CliRunner()
SERVER = [sys.executable, "-c", "from tau_mcp.servers.cli import app; app()"]
HARNESS = [sys.executable, "-m", "tau_mcp.harness"]


def _invoke(*args: str, env: dict[str, str | None] | None = None):
    return cli.invoke(app, list(args), env={"COLUMNS": "200", **(env or {})})


def test_start_help_lists_the_serve_options():
    shown = _invoke("start", "--help")
    assert shown.exit_code == 0, shown.output
    for option in ("--port", "--host", "--domains", "--data-dir", "--token", "--retrieval-config"):
        assert option in shown.output, (option, shown.output)
    assert "tau-harness start" in shown.output


def test_intro_names_only_files_that_exist(monkeypatch):
    from tau_mcp.harness.cli import tau2

    named = re.findall(r"\S+\.md\b", _invoke("intro").output)
    assert named, "a checkout's intro points at the guide, by a path that exists"
    assert all(Path(path).is_file() for path in named), named
    # A wheel install has no docs folder: the intro then names no file, and still says how a
    # tau2 command line carries over.
    monkeypatch.setattr(tau2, "FROM_TAU2_GUIDE", Path("/nonexistent/docs/from-tau2.md"))
    shown = _invoke("intro").output
    assert ".md" not in shown and "tau2" in shown and "--help" in shown


def test_a_run_refused_as_it_starts_prints_no_blank_line_first(tmp_path):
    refused = _invoke(
        "run", "--domain", "mock", "--agent", "llm", "--agent-llm", "gpt-4.1", "--num-tasks", "1",
        "--judge-llm", "none", "--data-dir", str(DEMO_DIR), "--save-to", str(tmp_path / "r.json"),
        env={"OPENAI_API_KEY": None, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip
    assert refused.exit_code == 1
    assert refused.output.startswith("error: the agent model 'gpt-4.1' needs OPENAI_API_KEY"), repr(
        refused.output
    )
    unwritable = _invoke(
        "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted", "--num-tasks", "1",
        "--data-dir", str(DEMO_DIR), "--save-to", "/proc/results.json",
    )  # fmt: skip
    assert unwritable.exit_code == 1
    assert unwritable.output.startswith("error: cannot write results to"), repr(unwritable.output)


@pytest.mark.e2e
def test_a_port_in_use_is_exit_code_1_from_both_programs():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        said = f"error: cannot listen on 127.0.0.1:{port}: it is already in use"
        for command in (
            [*SERVER, "serve", "--port", str(port), "--domains", "mock"],
            [*HARNESS, "start", "--port", str(port), "--domains", "mock"],
            [*HARNESS, "serve", "--domain", "mock", "--port", str(port)],
        ):
            done = subprocess.run(
                [*command, "--data-dir", str(DEMO_DIR)], capture_output=True, text=True, timeout=60
            )
            assert (done.returncode, done.stderr.strip()) == (1, said), command


@pytest.mark.e2e
def test_the_serve_banner_names_the_mcp_paths():
    import os
    import select
    import time

    proc = subprocess.Popen(
        [*SERVER, "serve", "--port", "0", "--domains", "mock", "--data-dir", str(DEMO_DIR)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    banner = b""
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        # The banner is printed at once, before the server accepts requests: read what comes
        # within a second of its first line.
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if not ready:
                if banner:
                    break
                continue
            chunk = os.read(proc.stderr.fileno(), 4096)
            if not chunk:
                break
            banner += chunk
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    text = banner.decode()
    base = re.search(r"http://127\.0\.0\.1:\d+", text)
    assert base is not None, text
    assert f"{base.group()}/mock/agent/mcp" in text and f"{base.group()}/mock/user/mcp" in text
    assert "/{domain}/episodes/{id}/agent/mcp" in text, text


# --- issue 31 item 16, the rest -------------------------------------------------------------------


def test_run_without_a_domain_points_to_the_harness_not_to_tau_server():
    refused = _invoke("run")
    assert refused.exit_code == 1
    assert "tau-server" not in refused.output
    assert "--domain is required" in refused.output and "mock" in refused.output
    assert "tau-harness domain NAME" in refused.output


def test_the_unknown_agent_and_user_messages_name_every_choice():
    agent = _invoke("run", "--domain", "mock", "--agent", "nope", "--data-dir", str(DEMO_DIR))
    assert agent.exit_code == 1
    for name in ("llm", "solo", "gt", "oracle", "cmd", "module:Class", "llm_agent",
                 "llm_agent_gt", "llm_agent_solo"):  # fmt: skip
        assert name in agent.output, (name, agent.output)
    user = _invoke("run", "--domain", "mock", "--agent", "oracle", "--user", "nope",
                   "--data-dir", str(DEMO_DIR))  # fmt: skip
    assert user.exit_code == 1
    for name in ("llm", "scripted", "dummy", "module:Class", "user_simulator", "dummy_user"):
        assert name in user.output, (name, user.output)


def _two_outcomes(tmp_path: Path) -> Path:
    """A file where demo_create passes and demo_complete fails (its user never acts)."""
    save_to = tmp_path / "r.json"
    done = _invoke(
        "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted",
        "--data-dir", str(DEMO_DIR), "--task-ids", "demo_create,demo_notice",
        "--save-to", str(save_to),
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    document = json.loads(save_to.read_text())
    document["simulations"][1]["reward_info"]["reward"] = 0.0
    save_to.write_text(json.dumps(document))
    return save_to


def _task_rows(output: str) -> list[str]:
    table = output[output.index("Tasks") : output.index("Simulations")]
    return [t for t in ("demo_create", "demo_notice") if t in table]


def test_view_only_failed_leaves_passing_tasks_out_of_the_task_table(tmp_path):
    save_to = _two_outcomes(tmp_path)
    assert _task_rows(_invoke("view", str(save_to)).output) == ["demo_create", "demo_notice"]
    for flag in ("--only-show-failed", "--only-failed", "--only-show-all-failed"):
        shown = _invoke("view", str(save_to), flag)
        assert shown.exit_code == 0, shown.output
        assert _task_rows(shown.output) == ["demo_notice"], (flag, shown.output)


def test_evaluate_names_the_run_by_its_agent(tmp_path):
    save_to = _two_outcomes(tmp_path)
    regraded = _invoke(
        "evaluate", "--domain", "mock", "--input", str(save_to), "--save-to",
        str(tmp_path / "e.json"), "--data-dir", str(DEMO_DIR),
    )  # fmt: skip
    assert regraded.exit_code == 0, regraded.output
    assert "run (run)" not in regraded.output
    assert "oracle (e)" in regraded.output
