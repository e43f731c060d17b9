"""Request parity with the original τ-bench on every recorded run of
`conformance/taubench/requests/`: `tau-harness run`, given each run's own command line (run.py's
options), sends the recorded chat-completions bodies, compared raw (`--strict`, which also
passes the tau2 kit's plain comparison), and its results, written in the original's layout,
equal the original's results file (its user cost aside).

Both ways of treating the original's user-simulator build calls are checked: by default they
are not sent (the recorded ones are left out of the reference), and with `--user-init-calls`
every recorded request is sent. See tests/support/taubench_parity.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.data import CONFORMANCE_DIR

pytestmark = [pytest.mark.needs_data("taubench", "conformance"), pytest.mark.e2e]

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"(\d+)/(\d+) runs identical, (\d+)/(\d+) requests identical")
MODES = ([], ["--init-calls"])


def _check(extra: list[str]) -> tuple[str, tuple[int, ...]]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.taubench_parity", "--strict", *extra],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True"),
        timeout=1200,
    )
    output = done.stdout + done.stderr
    match = SUMMARY.search(output)
    assert match, f"the checker printed no summary:\n{output[-3000:]}"
    return output, tuple(int(g) for g in match.groups())


def test_every_recorded_run_sends_the_original_requests() -> None:
    runs = [p for p in (CONFORMANCE_DIR / "taubench" / "requests").iterdir() if p.is_dir()]
    assert runs
    with ThreadPoolExecutor(len(MODES)) as pool:
        results = list(pool.map(_check, MODES))
    for output, (same_runs, n_runs, same, total) in results:
        assert n_runs == len(runs), output
        assert (same_runs, same) == (n_runs, total), output
