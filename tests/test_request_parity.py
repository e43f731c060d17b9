"""Request parity with the reference: given the replies the reference's models gave, tau-harness
sends the same chat-completions requests (model, messages, tools, tool_choice, temperature,
seed) for the agent, the user simulator and the NL judge.

Runs the conformance kit's own checker (`conformance/requests/tools/request_parity.py`), which
starts its fake model server (no key, loopback only) and runs `tau-harness run` once per
recorded run. The runs are split over two checker processes to halve the wall time.
"""

from __future__ import annotations

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


def _run_ids() -> list[str]:
    return sorted(p.stem for p in REQUESTS.glob("*.json") if p.name != "index.json")


def _check(run_ids: list[str]) -> tuple[str, tuple[int, int, int, int]]:
    only = [arg for run_id in run_ids for arg in ("--only", run_id)]
    bin_dir = str(Path(sys.executable).parent)  # this venv's tau-harness
    env = dict(
        os.environ,
        PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        TAU2_DATA_DIR=str(DATA_DIR),
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    done = subprocess.run(
        [sys.executable, str(CHECKER), str(REQUESTS), "--data-dir", str(DATA_DIR), *only],
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
