"""Issue 31 item 16, the small things of the two programs' start and their errors: `start --help`
lists `tau-server serve`'s options, `intro` names no file a wheel install lacks, the serve
banner names the MCP paths, a port in use is exit code 1 from both programs, and no error
comes after a blank line."""

from __future__ import annotations

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
