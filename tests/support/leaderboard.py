"""Runs for the leaderboard tests: fake-model runs of every domain, and the reference's own.

`fake_runs` makes real `tau-harness run`s (the llm agent and llm user against the scripted fake
model server, 4 trials of each domain's base split; the user ends every conversation at once,
so a task passes exactly when doing nothing satisfies it). `reference_runs` are the three
results files the reference made for its leaderboard fixture (gunzipped). `reference_python`
is an interpreter with the reference installed ($TAU_REFERENCE_PYTHON), else the test skips.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.data import CONFORMANCE_DIR, DATA_DIR, missing
from tests.support.fake_llm_server import FakeLLMServer

LEADERBOARD_DIR = CONFORMANCE_DIR / "leaderboard"
BOARD_DOMAINS = ("airline", "retail", "telecom")
ALL_DOMAINS = ("mock", *BOARD_DOMAINS)
AGENT, USER = "openai/fake-agent", "openai/fake-user"

needs_board_data = pytest.mark.skipif(
    missing(*ALL_DOMAINS) is not None
    or not (DATA_DIR / "tau2" / "leaderboard" / "schema.json").is_file(),
    reason=missing(*ALL_DOMAINS) or f"no leaderboard schema under {DATA_DIR}",
)
needs_fixture = pytest.mark.skipif(
    not (LEADERBOARD_DIR / "submission.json").is_file(),
    reason=f"leaderboard conformance fixture not found at {LEADERBOARD_DIR}",
)

cli = CliRunner()


def invoke(*args: str, input: str | None = None):
    from tau_mcp.harness.cli import app

    return cli.invoke(app, [str(a) for a in args], input=input)


def fake_run(fake: FakeLLMServer, domain: str, out: Path, *extra: str) -> Path:
    """A run whose key comes from the environment (set only while it runs), as users run."""
    args = json.dumps({"api_base": fake.api_base, "temperature": 0.0})
    previous = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "fake-key"
    try:
        result = _invoke_run(domain, out, args, extra)
    finally:
        if previous is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = previous
    assert result.exit_code == 0, result.output
    return out


def _invoke_run(domain: str, out: Path, args: str, extra: tuple[str, ...]):
    return invoke(
        "run",
        "--domain",
        domain,
        "--agent-llm",
        AGENT,
        "--agent-llm-args",
        args,
        "--user-llm",
        USER,
        "--user-llm-args",
        args,
        "--judge-llm",
        "none",
        "--max-concurrency",
        "16",
        "--data-dir",
        DATA_DIR,
        "--save-to",
        out,
        *extra,
    )


def _responders(fake: FakeLLMServer) -> None:
    fake.respond(USER.split("/")[1], lambda body: {"content": "###STOP###"})
    fake.respond(AGENT.split("/")[1], lambda body: {"content": "Goodbye."})


@pytest.fixture(scope="session")
def fake_server():
    with FakeLLMServer() as fake:
        _responders(fake)
        yield fake


@pytest.fixture(scope="session")
def fake_runs(tmp_path_factory, fake_server) -> dict[str, Path]:
    """Domain -> results file of a 4-trial run of its base split."""
    folder = tmp_path_factory.mktemp("fake-runs")
    return {
        d: fake_run(fake_server, d, folder / f"{d}.json", "--num-trials", "4") for d in ALL_DOMAINS
    }


@pytest.fixture(scope="session")
def reference_runs(tmp_path_factory) -> dict[str, Path]:
    if not (LEADERBOARD_DIR / "results").is_dir():
        pytest.skip(f"leaderboard conformance fixture not found at {LEADERBOARD_DIR}")
    folder = tmp_path_factory.mktemp("reference-runs")
    runs = {}
    for domain in BOARD_DOMAINS:
        target = folder / f"{domain}_results.json"
        with gzip.open(LEADERBOARD_DIR / "results" / f"{domain}_results.json.gz") as src:
            with target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
        runs[domain] = target
    return runs


def reference_python() -> str:
    python = os.environ.get("TAU_REFERENCE_PYTHON")
    if not python:
        pytest.skip("set TAU_REFERENCE_PYTHON to a Python with the reference (tau2) installed")
    probe = subprocess.run([python, "-c", "import tau2"], capture_output=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"{python} cannot import tau2")
    return python


def run_reference(python: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The reference's own command line, `tau2 ARGS`, against the data folder."""
    env = dict(os.environ, TAU2_DATA_DIR=str(DATA_DIR), LITELLM_LOCAL_MODEL_COST_MAP="True")
    env["COLUMNS"] = "200"
    return subprocess.run(
        [python, "-c", "from tau2.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=cwd,
        env=env,
    )


def edited_copy(source: Path, target: Path, edit) -> Path:
    """A copy of a results file with `edit(document)` applied (for breaking one rule)."""
    document = json.loads(source.read_text())
    edit(document)
    target.write_text(json.dumps(document, indent=1))
    return target
