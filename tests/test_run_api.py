"""The run API: `tau_mcp.run(RunConfig)` as docs/harness.md shows it (the snippet runs as written,
on the demo data, with no key), and `RunConfig`'s checks, each one sentence."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.errors import ConfigError
from tests.support.data import DEMO_DIR, ROOT


def docs_snippet() -> str:
    """The Python block docs/harness.md says this test runs."""
    text = (ROOT / "docs" / "harness.md").read_text()
    after = text.split("<!-- tests/test_run_api.py runs this snippet as written -->", 1)[1]
    match = re.search(r"```python\n(.*?)```", after, re.S)
    assert match, "docs/harness.md lost its run API snippet"
    return match.group(1)


@pytest.mark.e2e
def test_the_docs_snippet_runs_the_demo_with_no_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("TAU2_DATA_DIR", None)  # the bundled demo data, as the docs say
    done = subprocess.run(
        [sys.executable, "-c", docs_snippet()],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    printed = [line.split() for line in done.stdout.splitlines() if line.strip()]
    demo_tasks = json.loads((DEMO_DIR / "tau2" / "domains" / "mock" / "tasks.json").read_text())
    assert {task_id for task_id, _ in printed} == {t["id"] for t in demo_tasks}
    assert all(reward == "1.0" for _, reward in printed), done.stdout
    saved = json.loads((tmp_path / "results" / "mock-oracle.json").read_text())
    assert len(saved["simulations"]) == len(printed)
    # rerun: the file is resumed, nothing is run twice
    again = subprocess.run(
        [sys.executable, "-c", docs_snippet()],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert again.returncode == 0 and again.stdout == done.stdout, again.stderr


def test_run_returns_the_results_in_process(tmp_path: Path) -> None:
    import tau_mcp

    config = tau_mcp.RunConfig(
        domain="mock",
        data_dir=DEMO_DIR,
        agent="oracle",
        user="scripted",
        judge_llm="none",
        task_ids="demo_create, demo_history",
        num_trials=2,
    )
    results = tau_mcp.run(config)
    keys = sorted((s["task_id"], s["trial"]) for s in results.simulations)
    assert keys == [
        ("demo_create", 0),
        ("demo_create", 1),
        ("demo_history", 0),
        ("demo_history", 1),
    ]
    assert results.header["info"]["num_trials"] == 2
    assert not list(tmp_path.iterdir())  # save_to None: no file


@pytest.mark.parametrize(
    ("options", "sentence"),
    [
        ({"num_trials": 0}, "num_trials: input should be greater than or equal to 1, not 0"),
        ({"workers": "many"}, "--workers takes a number of processes or auto, not 'many'"),
        ({"provider_limits": "openai"}, "--provider-limit takes provider=N pairs"),
        ({"agent": "cmd"}, 'agent "cmd" needs the program to run'),
        ({"agent_cmd": "echo"}, "--agent-cmd goes with --agent cmd"),
        ({"agent": "cmd", "agent_cmd": "x", "workers": 2}, "--workers cannot run --agent cmd"),
        ({"agent": "cmd", "agent_cmd": "x", "ray": "auto"}, "drop --ray"),
        ({"task_set": "small"}, "unknown run option 'task_set' (did you mean task_set_name?)"),
        ({"max_steps": "ten"}, "max_steps: input should be a valid integer"),
    ],
)
def test_bad_options_are_one_sentence(options: dict, sentence: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RunConfig(domain="mock", **options)
    message = str(caught.value)
    assert sentence in message, message
    assert "\n" not in message and "pydantic" not in message


def test_options_are_read_as_the_command_reads_them() -> None:
    config = RunConfig(
        domain="mock", task_ids="a, b c", workers="auto", provider_limits="openai=4,Anthropic=2"
    )
    assert config.task_ids == ["a", "b", "c"] and config.workers == 0
    assert config.provider_limits == {"openai": 4, "anthropic": 2}
    assert RunConfig(domain="mock", task_ids=[7]).task_ids == ["7"]
    assert RunConfig(domain="mock", judge_llm="none").judge is None
    assert RunConfig(domain="mock").judge is not None  # the default judge, as the command's
    changed = config.replace(num_trials=3)
    assert (changed.num_trials, config.num_trials) == (3, 1)
    with pytest.raises(ConfigError):
        config.replace(num_trials=0)
    assert "secret" not in repr(RunConfig(domain="mock", server_token="secret"))


def test_importing_tau_mcp_loads_nothing_else() -> None:
    probe = "import sys, tau_mcp; print(sorted(m for m in sys.modules if m.startswith('tau_mcp')))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stdout.strip() == "['tau_mcp']", done.stdout + done.stderr
