"""What a run stopped by Ctrl-C or SIGTERM leaves behind, and how fast it goes.

Starts `tau-harness run` (oracle agent, scripted user, mock demo data, many trials), waits until
the results file's journal holds at least `--after` simulations more than the file itself (the
file is rewritten every few seconds, the journal at once), sends the signal, and prints the
seconds from the signal to the exit, the exit status, the simulations the message counts, the
simulations the file alone holds, and whether a journal is left. Issue 31 item 6: the file alone
must hold what the message counts.

    python scripts/bench_interrupt.py [--signal INT|TERM] [--after 3] [--trials 200]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def in_file(path: Path) -> int:
    try:
        return len(json.loads(path.read_text())["simulations"])
    except (OSError, ValueError, KeyError):
        return -1


def journal_lines(path: Path) -> int:
    journal = path.with_name(path.name + ".journal.jsonl")
    return len(journal.read_text().splitlines()) if journal.exists() else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signal", default="INT", choices=["INT", "TERM"])
    parser.add_argument("--after", type=int, default=3)
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    stop = signal.Signals[f"SIG{args.signal}"]
    folder = Path(tempfile.mkdtemp(prefix="bench-interrupt-"))
    save_to = folder / "run.json"
    command = [
        sys.executable, "-m", "tau_mcp.harness", "run", "--domain", "mock", "--agent", "oracle",
        "--user", "scripted", "--judge-llm", "none", "--num-trials", str(args.trials),
        "--max-concurrency", "1", "--data-dir", str(ROOT / "data" / "demo"),
        "--save-to", str(save_to),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while journal_lines(save_to) < max(in_file(save_to), 0) + args.after:
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"the run ended or stalled first (exit {proc.poll()})")
        time.sleep(0.005)
    before = (in_file(save_to), journal_lines(save_to))
    sent = time.monotonic()
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    last = err.strip().splitlines()[-1] if err.strip() else ""
    journal = save_to.with_name(save_to.name + ".journal.jsonl")
    print(f"before the signal: file {before[0]} simulations, journal {before[1]}")
    print(f"{stop.name} to exit: {took:.3f} s, exit status {proc.returncode}")
    print(f"message: {last}")
    print(f"the file alone holds {in_file(save_to)}; journal left: {journal.exists()}")


if __name__ == "__main__":
    main()
