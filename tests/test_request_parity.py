"""Request parity with the reference: given the replies the reference's models gave, tau-harness
sends the same chat-completions requests (model, messages, tools, tool_choice, temperature,
seed) for the agent, the user simulator and the NL judge.

Runs the conformance kit's own checker (`conformance/requests/tools/request_parity.py`), which
starts its fake model server (no key, loopback only) and runs `tau-harness run` once per
recorded run. The runs are split over two checker processes to halve the wall time.

The subfolders are checked too: `banking_knowledge/` (one run per retrieval config; the
`terminal_use` run needs the shell sandbox and is left out on a machine where bubblewrap cannot
start) and `telecom-workflow/`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.data import CONFORMANCE_DIR, DATA_DIR

REQUESTS = CONFORMANCE_DIR / "requests"
CHECKER = REQUESTS / "tools" / "request_parity.py"
SUMMARY = re.compile(r"request parity: (\d+)/(\d+) runs identical, (\d+)/(\d+) requests identical")
WORKERS = 2

pytestmark = [pytest.mark.needs_data("conformance", "reference_texts"), pytest.mark.e2e]


def _run_ids(folder: Path = REQUESTS) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.json") if p.name != "index.json")


def _check(run_ids: list[str], folder: Path = REQUESTS) -> tuple[str, tuple[int, int, int, int]]:
    only = [arg for run_id in run_ids for arg in ("--only", run_id)]
    bin_dir = str(Path(sys.executable).parent)  # this venv's tau-harness
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        TAU2_DATA_DIR=str(DATA_DIR),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        [sys.executable, str(CHECKER), str(folder), "--data-dir", str(DATA_DIR), *only],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    output = done.stdout + done.stderr
    match = SUMMARY.search(output)
    assert match, f"the checker printed no summary:\n{output[-3000:]}"
    return output, tuple(int(g) for g in match.groups())  # type: ignore[return-value]


def test_every_recorded_run_sends_the_reference_requests():
    run_ids = _run_ids()
    assert run_ids, f"no fixtures in {REQUESTS}"
    groups = [run_ids[i::WORKERS] for i in range(WORKERS)]
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(_check, [g for g in groups if g]))
    same_runs = sum(r[1][0] for r in results)
    runs = sum(r[1][1] for r in results)
    same_requests = sum(r[1][2] for r in results)
    requests = sum(r[1][3] for r in results)
    report = "\n".join(r[0] for r in results)
    assert runs == len(run_ids), report
    assert (same_runs, same_requests) == (runs, requests), report


def _offline_runs(folder: Path) -> list[str]:
    """The folder's runs whose retrieval config can run here (all of them outside
    banking_knowledge)."""
    from tau_mcp.servers.knowledge.sandbox import sandbox_problem

    runs = []
    for run_id in _run_ids(folder):
        fixture = json.loads((folder / f"{run_id}.json").read_text())
        config = fixture.get("retrieval_config")
        if config in SHELL_CONFIGS and sandbox_problem() is not None:
            continue
        runs.append(run_id)
    return runs


SHELL_CONFIGS = {"terminal_use", "terminal_use_write"}


@pytest.mark.parametrize("subfolder", ["banking_knowledge", "telecom-workflow"])
def test_every_offline_run_of_a_subfolder_sends_the_reference_requests(subfolder: str):
    folder = REQUESTS / subfolder
    if not folder.is_dir():
        pytest.skip(f"no {subfolder} request fixtures in {REQUESTS}")
    run_ids = _offline_runs(folder)
    assert run_ids, f"no runnable fixtures in {folder}"
    report, (same_runs, runs, same_requests, requests) = _check(run_ids, folder)
    assert runs == len(run_ids), report
    assert (same_runs, same_requests) == (runs, requests), report
