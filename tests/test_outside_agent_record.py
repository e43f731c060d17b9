"""Issue 31 items 1 and 2: an outside agent is recorded as what it is.

A `run --agent cmd` results file said `agent_info.llm = "gpt-4.1-2025-04-14"` (the default agent
model, never called) and recorded the command nowhere; the summary, `view` and the report
labelled the run gpt-4.1; `serve` simulations likewise. Now the header holds the command (keys
redacted) and the label `--agent-name` gives, and no model; readers label the run by them. And
resuming a `--agent cmd` file with another command (or label) is refused like any other change
of agent settings.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.redaction import REDACTED
from tests.support.data import DEMO_DIR

pytestmark = pytest.mark.e2e
cli = CliRunner()
INLINE_KEY = "sk-inline-PLANTED-0123456789"


def _run(save_to: Path, *extra: str):
    return cli.invoke(
        app,
        [
            "run", "--domain", "mock", "--user", "scripted", "--judge-llm", "none",
            "--data-dir", str(DEMO_DIR), "--save-to", str(save_to), "--agent", "cmd", *extra,
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip


def test_a_cmd_run_records_its_command_and_label_and_no_model(tmp_path):
    save_to = tmp_path / "cmd.json"
    command = f"OPENAI_API_KEY={INLINE_KEY} true --api-key {INLINE_KEY}x"
    done = _run(
        save_to, "--agent-cmd", command, "--agent-name", "my-agent v2", "--task-ids", "demo_create"
    )
    assert done.exit_code == 0, done.output
    header = json.loads(save_to.read_text())["info"]["agent_info"]
    assert header == {
        "implementation": "cmd",
        "llm": None,
        "llm_args": None,
        "name": "my-agent v2",
        "command": f"OPENAI_API_KEY={REDACTED} true --api-key {REDACTED}",
    }
    assert "PLANTED" not in save_to.read_text() and "PLANTED" not in done.output
    assert "gpt-4.1" not in done.output and "my-agent v2" in done.output
    for shown in (
        cli.invoke(app, ["view", str(save_to)], env={"COLUMNS": "200"}),
        cli.invoke(app, ["view", "--dir", str(tmp_path)], env={"COLUMNS": "200"}),
        cli.invoke(app, ["report", str(save_to), "--format", "md"], env={"COLUMNS": "200"}),
        cli.invoke(app, ["report", str(save_to), "--format", "json"], env={"COLUMNS": "200"}),
    ):
        assert shown.exit_code == 0, shown.output
        assert "gpt-4.1" not in shown.output and "my-agent v2" in shown.output, shown.output


def test_without_a_label_the_command_names_the_run(tmp_path):
    save_to = tmp_path / "cmd.json"
    done = _run(save_to, "--agent-cmd", "true", "--task-ids", "demo_create")
    assert done.exit_code == 0, done.output
    header = json.loads(save_to.read_text())["info"]["agent_info"]
    assert header["llm"] is None and header["command"] == "true" and header["name"] is None
    report = cli.invoke(app, ["report", str(save_to), "--format", "json"])
    assert json.loads(report.output)["runs"][0]["label"] == "cmd: true (cmd)"


def test_a_model_option_with_an_outside_agent_is_refused(tmp_path):
    done = _run(tmp_path / "r.json", "--agent-cmd", "true", "--agent-llm", "gpt-4.1")
    assert done.exit_code == 1
    assert done.output.startswith("error: --agent-llm") and "--agent-name" in done.output
    assert not (tmp_path / "r.json").exists()
    label = cli.invoke(app, ["run", "--domain", "mock", "--agent", "oracle", "--agent-name", "x"])
    assert label.exit_code == 1 and "--agent-name" in label.output


def test_resuming_with_another_command_or_label_is_refused(tmp_path):
    save_to = tmp_path / "cmd.json"
    # demo_create is played (the program quits at once: graded); demo_complete's program
    # fails before its first call, an infrastructure error left for the resumed run
    program = 'test "$TAU_TASK_ID" = demo_create || exit 3'
    tasks = ("--task-ids", "demo_create,demo_complete", "--max-retries", "0")
    first = _run(save_to, "--agent-cmd", program, "--agent-name", "a", *tasks)
    assert first.exit_code == 1 and "1 of 2 simulations ended in an infrastructure error" in (
        first.output.replace("\n", " ")
    ), first.output
    before = save_to.read_bytes()
    other = _run(save_to, "--agent-cmd", "exit 0", "--agent-name", "a", *tasks)
    assert other.exit_code == 1
    assert f"holds a run with other settings: agent command {program} (now exit 0)" in (
        other.output.replace("\n", "")
    ), other.output
    relabelled = _run(save_to, "--agent-cmd", program, "--agent-name", "b", *tasks)
    assert relabelled.exit_code == 1 and "agent name a (now b)" in relabelled.output
    assert save_to.read_bytes() == before
    same = _run(save_to, "--agent-cmd", program, "--agent-name", "a", *tasks)
    assert "kept 1 finished simulation, 1 to run" in same.output, same.output


def test_a_served_simulation_records_no_model(tmp_path):
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.harness.serve.simulation import make_hub
    from tau_mcp.servers.domains.registry import load_domains

    domain = load_domains(["mock"], DEMO_DIR)["mock"]

    async def header(**label) -> dict:
        backend = await in_process_backend({"mock": domain})
        save_to = tmp_path / f"serve-{len(label)}.json"
        config = RunConfig(
            domain="mock", data_dir=DEMO_DIR, agent="mcp", user="scripted", judge_llm="none",
            **label,
        )  # fmt: skip
        hub = make_hub(backend, domain, config, save_to)
        await hub.close()
        await backend.close()
        return json.loads(save_to.read_text())["info"]["agent_info"]

    assert asyncio.run(header()) == {
        "implementation": "mcp", "llm": None, "llm_args": None, "name": None,
    }  # fmt: skip
    assert asyncio.run(header(agent_name="claude-code"))["name"] == "claude-code"
    shown = cli.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"})
    assert "--agent-name" in shown.output
