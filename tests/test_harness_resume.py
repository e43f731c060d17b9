"""A run killed mid-way keeps every finished simulation in a valid file, and rerunning with the
same --save-to finishes only what is missing. Also exercises the `module:Class` agent plug-in."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tau_mcp.harness.agents import OracleAgent
from tau_mcp.harness.results import journal_path, load_results
from tests.support.data import DEMO_DIR, ROOT

pytestmark = pytest.mark.e2e


class SlowOracle(OracleAgent):
    """The oracle, slowed down so the test can kill the run between simulations."""

    implementation = "slow-oracle"

    async def respond(self, incoming):
        await asyncio.sleep(0.15)
        return await super().respond(incoming)


def _harness(save_to, agent: str) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "tau_mcp.harness",
        "run",
        "--domain",
        "mock",
        "--agent",
        agent,
        "--user",
        "scripted",
        "--max-concurrency",
        "1",
        "--judge-llm",
        "none",
        "--save-to",
        str(save_to),
        "--num-trials",
        "2",
        "--data-dir",
        str(DEMO_DIR),
    ]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def test_killed_run_resumes_without_losing_or_corrupting_anything(tmp_path):
    save_to = tmp_path / "results.json"
    proc = _harness(save_to, "tests.test_harness_resume:SlowOracle")
    deadline = time.time() + 60
    finished: list[dict] = []
    try:
        while time.time() < deadline and proc.poll() is None:
            if save_to.exists():
                json.loads(save_to.read_text())  # the results file is always a whole document
                finished = load_results(save_to)["simulations"]  # file + its journal
                if len(finished) >= 3:
                    proc.send_signal(signal.SIGKILL)
                    break
            time.sleep(0.02)
    finally:
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]

    json.loads(save_to.read_text())  # still a valid document after the kill
    after_kill = load_results(save_to)
    kept = {s["id"]: s for s in after_kill["simulations"]}
    assert 3 <= len(kept) < 10
    assert (
        after_kill["info"]["agent_info"]["implementation"] == "tests.test_harness_resume:SlowOracle"
    )

    rerun = _harness(save_to, "tests.test_harness_resume:SlowOracle")  # same settings resume
    out, err = rerun.communicate(timeout=120)
    assert rerun.returncode == 0, err.decode()[-2000:]
    final = json.loads(save_to.read_text())["simulations"]
    assert not journal_path(save_to).exists()  # a finished run folds the journal in
    assert len(final) == 10 and len({(s["task_id"], s["trial"]) for s in final}) == 10
    by_id = {s["id"]: s for s in final}
    for sim_id, sim in kept.items():
        assert by_id[sim_id] == sim  # finished simulations are kept as they were
    assert all(s["reward_info"]["db_check"]["db_match"] for s in final)
    assert b"pass^1" in out


def test_journal_is_folded_in_and_a_torn_line_ignored(tmp_path):
    from tau_mcp.harness.results import ResultsFile

    path = tmp_path / "r.json"
    results = ResultsFile(path, {"note": "x"}, [])
    results.save()
    for i in range(3):
        results.add({"id": f"s{i}", "task_id": str(i), "trial": 0})
    with journal_path(path).open("a") as fh:
        fh.write('{"id": "torn", "task_')  # a write cut short by a kill
    assert json.loads(path.read_text())["simulations"] == []  # the file lags; the journal has them
    assert [s["id"] for s in load_results(path)["simulations"]] == ["s0", "s1", "s2"]
    results.finish()
    assert not journal_path(path).exists()
    assert [s["id"] for s in json.loads(path.read_text())["simulations"]] == ["s0", "s1", "s2"]
