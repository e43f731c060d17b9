"""Benchmark record and replay (issue 33): a recorded 200-simulation airline run against its
replay, and what the cassette costs on disk.

    python scripts/bench_replay.py [--num-tasks 50] [--num-trials 4] [--max-concurrency 16]
        [--repeat 1] [--instant-llm ../shared/perf/instant_llm.py] [--data-dir ../shared/tau2-data]

Starts the shared instant fake model (`instant_llm.py`, as `bench_throughput.py` does) inside
this process and runs `tau-harness run` three times as child processes, one after another: a
plain run (no cassette), the same run with `--record DIR`, then `--replay DIR` (`--repeat R`:
R such rounds, each recording a new cassette, and the medians printed). For each it
prints the wall time, the harness's CPU (user + system, from the child's rusage) and the model
requests the instant model answered (the replay must make none); then the cassette's size on
disk per simulation (lanes, shared calls and blobs), and whether the replayed results file holds
the recorded simulations (ids, times and durations aside). Workload: airline, `--agent llm
--user llm`, `openai/fake`, `--judge-llm none`, 50 tasks x 4 trials = 200 simulations. The
machine's load average is printed before and after: the figures are noisy on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_throughput import DEFAULT_DATA, DEFAULT_FAKE, InstantModel, environment

RUNS = ("plain", "record", "replay")
VOLATILE = frozenset({"id", "timestamp", "start_time", "end_time", "duration", "episode_id"})


def comparable(value):
    if isinstance(value, dict) and isinstance(value.get("simulations"), list):
        sims = sorted(value["simulations"], key=lambda s: (str(s["task_id"]), s.get("trial")))
        value = {**value, "simulations": sims}
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in VOLATILE and k != "cassette"}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


def run(args, model: InstantModel, env: dict[str, str], save_to: Path, extra: list[str]):
    command = [
        sys.executable, "-m", "tau_mcp.harness", "run", "--domain", "airline",
        "--agent", "llm", "--agent-llm", "openai/fake", "--user", "llm",
        "--user-llm", "openai/fake", "--judge-llm", "none",
        "--num-tasks", str(args.num_tasks), "--num-trials", str(args.num_trials),
        "--max-concurrency", str(args.max_concurrency), "--max-retries", "0",
        "--data-dir", str(args.data_dir), "--save-to", str(save_to), *extra,
    ]  # fmt: skip
    model.reset()
    started = time.perf_counter()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"error: tau-harness exited with {status}:\n{stderr[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, model.requests


def folder_size(folder: Path) -> tuple[int, dict[str, int]]:
    parts: dict[str, int] = {}
    for path in folder.rglob("*"):
        if path.is_file():
            top = path.relative_to(folder).parts[0]
            parts[top] = parts.get(top, 0) + path.stat().st_size
    return sum(parts.values()), parts


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-tasks", type=int, default=50)
    parser.add_argument("--num-trials", type=int, default=4)
    parser.add_argument("--max-concurrency", type=int, default=16)
    parser.add_argument("--tool-calls", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=1, help="rounds of the three runs")
    parser.add_argument("--instant-llm", type=Path, default=DEFAULT_FAKE)
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if min(args.repeat, args.num_tasks, args.num_trials, args.max_concurrency) < 1:
        parser.error("--repeat, --num-tasks, --num-trials and --max-concurrency take 1 or more")
    model = InstantModel(args.instant_llm, args.data_dir, args.tool_calls)
    env = environment(model)
    print(f"load average before: {load()} ({os.cpu_count()} CPUs)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        figures: dict[str, list[tuple[float, float, int]]] = {n: [] for n in RUNS}
        same = True
        for round_ in range(args.repeat):  # the three runs in turn, so load falls on each
            tape = folder / f"tape-{round_}"
            for name in RUNS:
                extra = {"plain": [], "record": ["--record", str(tape)]}.get(
                    name, ["--replay", str(tape)]
                )
                save_to = folder / f"{name}-{round_}.json"
                figures[name].append(run(args, model, env, save_to, extra))
            one, two = (
                json.loads((folder / f"{n}-{round_}.json").read_text())
                for n in ("record", "replay")
            )
            same = same and comparable(one) == comparable(two)
        sims = len(json.loads((folder / "record-0.json").read_text())["simulations"])
        median = {
            n: tuple(statistics.median(f[i] for f in figures[n]) for i in range(3)) for n in RUNS
        }
        rounds = f"median of {args.repeat} rounds" if args.repeat > 1 else "one round"
        print(f"{sims} simulations per run, {rounds}:")
        for name in RUNS:
            wall, cpu, requests = median[name]
            print(
                f"{name:>6}: wall {wall:.2f} s ({sims / wall:.1f} sim/s), harness CPU {cpu:.2f} s "
                f"({cpu * 1000 / sims:.1f} ms per simulation), {requests:.0f} model requests"
            )
        plain, record, replay = median["plain"], median["record"], median["replay"]
        print(
            f"recording costs {record[1] - plain[1]:+.2f} s CPU ({(record[1] / plain[1] - 1):+.0%}) "
            f"and {record[0] - plain[0]:+.2f} s wall against the plain run; the replay takes "
            f"{replay[0] / record[0]:.0%} of the recorded run's wall time and "
            f"{replay[1] / record[1]:.0%} of its CPU (it never imports litellm)"
        )
        total, parts = folder_size(tape)
        lanes = len(list((tape / "lanes").iterdir()))
        shown = ", ".join(f"{k} {v / 1024:.0f} KiB" for k, v in sorted(parts.items()))
        print(
            f"cassette: {total / 1024:.0f} KiB for {sims} simulations ({lanes} lanes), "
            f"{total / sims / 1024:.1f} KiB per simulation ({shown}); "
            f"{record[2] / sims:.1f} calls per simulation"
        )
        print(f"replayed results equal the recorded ones (ids, times aside): {same}")
    print(f"load average after: {load()}")
    if not same or any(f[2] for f in figures["replay"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
