"""`--task-set-name` on every command that loads a domain's tasks: run, serve, play, evaluate and
the reference's `evaluate-trajs`. The same help and the same one-sentence refusal of an unknown
set everywhere; a run records its set and re-grading defaults to it. Telecom's `telecom_small`
(tasks_small.json: 20 tasks whose base split is theirs) is the set used."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import httpx2
import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.cli.common import TASK_SET_HELP
from tau_mcp.servers.domains.registry import load_domains
from tests.support.data import DATA_DIR
from tests.support.harness import load
from tests.support.server import spawned

pytestmark = pytest.mark.needs_data("telecom")
cli = CliRunner()
SET = "telecom_small"
UNKNOWN = "telecom_tiny"
REFUSAL = f"unknown task set '{UNKNOWN}' for domain 'telecom' (have: "
COMMANDS = ("run", "serve", "play", "evaluate", "evaluate-trajs")


def _small():
    """telecom bound to the set."""
    return load_domains(["telecom"], DATA_DIR, task_set=SET)["telecom"]


def _small_task() -> str:
    return _small().task_ids("base")[0]


def _run(out: Path, *extra: str):
    args = ["run", "--domain", "telecom", "--agent", "oracle", "--user", "scripted"]
    args += ["--task-ids", _small_task(), "--save-to", str(out), "--data-dir", str(DATA_DIR)]
    return cli.invoke(app, [*args, "--judge-llm", "none", *extra])


@pytest.fixture(scope="module")
def small_results(tmp_path_factory) -> Path:
    """A finished run of one telecom_small task (oracle agent, scripted user: no model)."""
    out = tmp_path_factory.mktemp("small") / "results.json"
    done = _run(out, "--task-set-name", SET)
    assert done.exit_code == 0, done.output
    return out


def _invoke(command: str, tmp_path: Path, results: Path, *extra: str):
    """One command with the data folder, run as far as loading its domain."""
    data = ["--data-dir", str(DATA_DIR)]
    if command == "run":
        return _run(tmp_path / "out.json", *extra)
    if command == "serve":
        args = ["serve", "--domain", "telecom", "--user", "scripted", "--judge-llm", "none"]
        return cli.invoke(app, [*args, "--port", "0", *data, *extra])
    if command == "play":
        return cli.invoke(app, ["play", "--domain", "telecom", *data, *extra])
    if command == "evaluate":
        args = ["evaluate", "--input", str(results), "--save-to", str(tmp_path / "regraded.json")]
        return cli.invoke(app, [*args, "--judge-llm", "none", *data, *extra])
    args = ["evaluate-trajs", str(results), "-o", str(tmp_path / "graded"), "--judge-llm", "none"]
    return cli.invoke(app, [*args, *data, *extra])


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_takes_the_option_with_the_same_help(command: str) -> None:
    shown = cli.invoke(app, [command, "--help"], terminal_width=400)
    assert shown.exit_code == 0, shown.output
    flat = " ".join(shown.output.replace("│", " ").split())
    assert "--task-set-name" in flat
    assert " ".join(TASK_SET_HELP.removesuffix(".").split()) in flat


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_set_is_refused_in_one_sentence(
    command: str, tmp_path: Path, small_results: Path
) -> None:
    done = _invoke(command, tmp_path, small_results, "--task-set-name", UNKNOWN)
    assert done.exit_code == 1, done.output
    assert "Traceback" not in done.output
    errors = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {REFUSAL}"), done.output
    assert "telecom_small" in errors[0]
    assert not [p for p in tmp_path.iterdir()]  # nothing written


def test_run_records_its_set_and_evaluate_defaults_to_it(
    tmp_path: Path, small_results: Path
) -> None:
    results = json.loads(small_results.read_text())
    assert results["info"]["task_set_name"] == SET
    assert results["simulations"][0]["reward_info"]["reward"] == 1.0
    # Without a set, a run records none (the file looks as before).
    plain = tmp_path / "plain.json"
    assert _run(plain).exit_code == 0
    assert "task_set_name" not in json.loads(plain.read_text())["info"]

    done = _invoke("evaluate", tmp_path, small_results)
    assert done.exit_code == 0, done.output
    regraded = json.loads((tmp_path / "regraded.json").read_text())
    assert regraded["simulations"][0]["reward_info"]["reward"] == 1.0

    # The header's set is the one used: a header naming an unknown set is refused, unless
    # --task-set-name says which to use.
    renamed = tmp_path / "renamed" / "results.json"
    renamed.parent.mkdir()
    renamed.write_text(
        json.dumps({**results, "info": {**results["info"], "task_set_name": UNKNOWN}})
    )
    for command in ("evaluate", "evaluate-trajs"):
        refused = _invoke(command, tmp_path / command, renamed)
        assert refused.exit_code == 1 and REFUSAL in refused.output, refused.output
        chosen = _invoke(command, tmp_path / command, renamed, "--task-set-name", SET)
        assert chosen.exit_code == 0, chosen.output


def test_a_resumed_run_must_use_the_same_set(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    assert _run(out, "--task-set-name", SET).exit_code == 0
    header = json.loads(out.read_text())
    header["info"]["task_set_name"] = "telecom_full"
    out.write_text(json.dumps(header))
    again = _run(out, "--task-set-name", SET)
    assert again.exit_code != 0 and "task set telecom_full (now telecom_small)" in again.output


@pytest.mark.e2e
def test_serve_hosts_the_sets_tasks() -> None:
    command = [sys.executable, "-m", "tau_mcp.harness", "serve", "--domain", "telecom", "--user"]
    command += ["scripted", "--judge-llm", "none", "--port", "{port}", "--task-set-name", SET]
    command += ["--data-dir", str(DATA_DIR)]
    small = _small()
    with spawned(command, env={"TAU2_DATA_DIR": str(DATA_DIR)}) as base:
        listed = httpx2.get(base + "/tasks", timeout=30).json()["tasks"]
    assert [t["id"] for t in listed] == small.task_ids("base")
    assert len(listed) == 20 < len(load("telecom").task_ids("base"))


@pytest.mark.e2e
def test_play_offers_the_sets_tasks(tmp_path: Path) -> None:
    """Asked for a task, play lists the set's 20 tasks (the domain's own list is longer)."""
    pexpect = pytest.importorskip("pexpect", reason="drives a pseudo-terminal (pexpect)")
    exe = shutil.which("tau-harness") or ""
    args = ["play", "--domain", "telecom", "--user", "scripted", "--data-dir", str(DATA_DIR)]
    command, argv = (exe, args) if exe else (sys.executable, ["-m", "tau_mcp.harness", *args])

    def offered(*extra: str) -> str:
        env = {**os.environ, "TERM": "dumb", "COLUMNS": "200"}
        child = pexpect.spawn(
            command, [*argv, *extra], cwd=str(tmp_path), env=env, encoding="utf-8", timeout=60
        )
        child.expect("task id> ")
        shown = child.before
        child.sendeof()
        child.expect(pexpect.EOF)
        return shown

    small = _small().task_ids(None)
    shown = "".join(offered("--task-set-name", SET).split())  # the terminal wraps long ids
    assert "more)" not in shown and all("".join(t.split()) in shown for t in small)
    assert "more)" in offered()


def test_the_gymnasium_environments_take_the_set() -> None:
    """`task_set_name` reaches Agent-v0 and User-v0: they draw from the set's tasks."""
    gym = pytest.importorskip("gymnasium", reason="gymnasium not installed (the gym extra)")
    import tau_mcp.harness.integrations.gym  # noqa: F401 - registers the ids

    small = _small().task_ids("base")
    for env_id, partner in (
        ("tau-mcp/Agent-v0", {"user": "scripted"}),
        ("tau-mcp/User-v0", {"agent": "oracle"}),
    ):
        env = gym.make(
            env_id, domain="telecom", task_set_name=SET, data_dir=str(DATA_DIR), **partner
        )
        try:
            assert env.unwrapped.driver.task_ids == small
            _, info = env.reset(seed=3)
            assert info["task_id"] in small
        finally:
            env.close()
