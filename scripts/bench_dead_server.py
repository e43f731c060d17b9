"""How long `tau-harness run --server URL` takes to give up on a tau-server killed mid-run.

Starts `tau-server serve` on a free loopback port, starts a run against it (oracle agent,
scripted user, many trials so it is still running), SIGKILLs the server once N simulations are
saved, and prints the seconds from the kill to the run's exit, its exit code and its last line.
Before the dead-server bound (issue 22, item 9) this took 314 s; the bound is
`tau_mcp.harness.backends.exchange.DEAD_SERVER_S`.

    python scripts/bench_dead_server.py [--domain airline] [--after 5] [--trials 20]
        [--workers N] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from serving import Wait, start_tau_server

ROOT = Path(__file__).resolve().parents[1]


def saved(path: Path) -> int:
    sys.path.insert(0, str(ROOT))
    from tau_mcp.harness.results import ResultsError, load_results

    try:
        return len(load_results(path)["simulations"])
    except ResultsError:
        return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--after", type=int, default=5, help="kill after this many simulations")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--workers", default="1", help="passed to the run (--workers N)")
    parser.add_argument("--data-dir", default=os.environ.get("TAU2_DATA_DIR"))
    args = parser.parse_args()
    data = ["--data-dir", args.data_dir] if args.data_dir else []
    url, server = start_tau_server(
        ["--domains", args.domain, *data],
        Wait(seconds=60, interval=0.1, failure="tau-server did not start"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        save_to = Path(tmp) / "run.json"
        run = subprocess.Popen(
            [sys.executable, "-m", "tau_mcp.harness", "run", "--domain", args.domain]
            + ["--agent", "oracle", "--user", "scripted", "--judge-llm", "none"]
            + ["--num-trials", str(args.trials), "--server", url, "--save-to", str(save_to)]
            + ["--workers", args.workers]
            + data,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            while saved(save_to) < args.after:
                if run.poll() is not None:
                    sys.exit("the run ended before the kill; raise --trials")
                time.sleep(0.05)
            os.killpg(server.pid, signal.SIGKILL)
            killed = time.monotonic()
            _, err = run.communicate(timeout=900)
            took = time.monotonic() - killed
        finally:
            if server.poll() is None:
                os.killpg(server.pid, signal.SIGKILL)
            if run.poll() is None:
                run.kill()
        last = [ln for ln in err.splitlines() if ln.strip()][-1:] or [""]
        print(f"killed after {saved(save_to)} saved simulations")
        print(f"run exited {took:.1f} s after the kill, exit code {run.returncode}")
        print(f"last line: {last[0]}")
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
