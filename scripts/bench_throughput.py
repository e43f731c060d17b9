"""Benchmark the harness's own cost per model turn against an instant fake model.

Starts `instant_llm.py` (the shared stateless fake model; it answers at once) inside this process,
runs `tau-harness run` as a child process on it and prints simulations/s, the harness's CPU
milliseconds per model request (all in: episode creation, MCP tool calls, user simulator, grading,
results writing; with `--workers N`, the driver's and every worker's), its peak RSS, and the
start-up time to the first model request.

    python scripts/bench_throughput.py [--max-concurrency 16] [--workers 1] [--startup-only]
        [--instant-llm ../shared/perf/instant_llm.py] [--data-dir ../shared/tau2-data]
        [--profile out.html]

Workload (issue 15): airline, `--agent llm --user llm`, 2 trials, `--judge-llm none`, models
`openai/fake`; 100 simulations, 8 model requests and 5 tool calls each. Goals are printed next to
the figures, not asserted: the machine is shared and timings are noisy.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from serving import free_port

REPO = Path(__file__).resolve().parents[1]
# ../shared beside the checkout, or beside the checkout's parent (a git worktree under wt/)
SHARED = next((p / "shared" for p in REPO.parents[:2] if (p / "shared").is_dir()), REPO.parent)
DEFAULT_FAKE = SHARED / "perf/instant_llm.py"
DEFAULT_DATA = SHARED / "tau2-data"
GOAL_CPU_MS = 3.0
GOAL_STARTUP_S = 1.5


class InstantModel:
    """The shared fake model served from a thread of this process, with a request counter and
    the time of the first request (the start of the first simulation)."""

    def __init__(self, script: Path, data_dir: Path, tool_calls: int) -> None:
        spec = importlib.util.spec_from_file_location("instant_llm", script)
        if spec is None or spec.loader is None:
            raise SystemExit(f"error: cannot load the instant model from {script}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.print = lambda *args, **kwargs: None  # its progress lines would mix with ours
        # http.server listens with a backlog of 5: a burst of new connections (each worker
        # process opens its own) overflows it and stalls in TCP retransmission for seconds.
        module.ThreadingHTTPServer.request_queue_size = 1024
        # It writes a reply's headers and body separately: with Nagle's algorithm on, the body
        # waits for the client's delayed ACK of the headers (~40 ms on loopback), so every
        # "instant" reply took 40 ms and a run was bound by that latency, not by the harness.
        module.BaseHTTPRequestHandler.disable_nagle_algorithm = True
        self.requests = 0
        self.first_request: float | None = None
        self.first_request_cpu: float | None = None  # the watched process's CPU seconds then
        self.watch_pid: int | None = None
        self._lock = threading.Lock()
        original = module.reply

        def counted(*args, **kwargs):
            with self._lock:
                self.requests += 1
                if self.first_request is None:
                    self.first_request = time.perf_counter()
                    self.first_request_cpu = tree_cpu(self.watch_pid)
            return original(*args, **kwargs)

        module.reply = counted
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        argv = ["instant_llm", "--data-dir", str(data_dir), "--port", str(self.port)]
        argv += ["--tool-calls", str(tool_calls)]

        def serve() -> None:
            saved, sys.argv = sys.argv, argv
            try:
                module.main()
            finally:
                sys.argv = saved

        threading.Thread(target=serve, daemon=True).start()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.02)
        raise SystemExit("error: the instant model did not start")

    def reset(self, pid: int | None = None) -> None:
        with self._lock:
            self.requests, self.first_request, self.first_request_cpu = 0, None, None
            self.watch_pid = pid


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (field 3 onwards), or None if gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def process_tree(pid: int) -> list[int]:
    """`pid` and its live descendants (worker processes and whatever they started)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents[int(entry.name)] = int(fields[1])
    tree, frontier = [pid], [pid]
    while frontier:
        frontier = [child for child, parent in parents.items() if parent in frontier]
        tree += frontier
    return tree


def tree_cpu(pid: int | None, tree: list[int] | None = None) -> float | None:
    """User + system CPU seconds of a running process and all its descendants, live ones and
    those already reaped (Linux /proc: utime, stime, cutime, cstime)."""
    if pid is None:
        return None
    total = 0
    for member in tree or process_tree(pid):
        fields = _stat(member)
        if fields is not None:
            total += sum(int(f) for f in fields[11:15])
    return total / os.sysconf("SC_CLK_TCK")


def tree_pss(tree: list[int]) -> int:
    """Proportional set size of a process tree in bytes: each page shared by k processes (the
    workers share the driver's pages copy-on-write) counted 1/k in each, so the sum is real."""
    total = 0
    for member in tree:
        try:
            text = Path(f"/proc/{member}/smaps_rollup").read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
                break
    return total


class TreeSampler:
    """Samples a process tree's CPU and summed PSS while it runs: the memory of a run with
    workers is their sum, which rusage (the largest single process) does not give, and the CPU
    seen is a check that the driver reaped its workers (else rusage would miss theirs)."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self.pid, self.interval = pid, interval
        self.cpu = 0.0
        self.pss = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            tree = process_tree(self.pid)
            self.processes = max(self.processes, len(tree))
            self.cpu = max(self.cpu, tree_cpu(self.pid, tree) or 0.0)
            self.pss = max(self.pss, tree_pss(tree))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def harness_command(args: argparse.Namespace, save_to: Path, extra: list[str]) -> list[str]:
    run = [
        "run",
        "--domain",
        args.domain,
        "--agent",
        "llm",
        "--agent-llm",
        "openai/fake",
        "--user",
        "llm",
        "--user-llm",
        "openai/fake",
        "--judge-llm",
        "none",
        "--save-to",
        str(save_to),
        "--data-dir",
        str(args.data_dir),
        *extra,
    ]
    if args.profile:
        return [sys.executable, "-c", PROFILED.format(out=args.profile), *run]
    return [sys.executable, "-c", MARKED, *run]


# The harness with a line on stderr when its first simulation starts (wall clock, CPU so far)
# and one with the CPU its one import of litellm took (a fixed cost per process).
MARKED = """
import sys, time
import tau_mcp.conversation.llm as llm
import tau_mcp.harness.simulate as simulate_module
original = simulate_module.SimulationRunner.simulate
def simulate(self, *args, **kwargs):
    if not getattr(simulate_module, "_bench_marked", False):
        simulate_module._bench_marked = True
        sys.stderr.write(f"BENCH-FIRST-SIMULATION {time.time()} {time.process_time()}\\n")
        sys.stderr.flush()
    return original(self, *args, **kwargs)
simulate_module.SimulationRunner.simulate = simulate
load_litellm = llm.litellm_module
def litellm_module():
    if llm._litellm is not None:
        return llm._litellm
    started = time.process_time()
    module = load_litellm()
    sys.stderr.write(f"BENCH-LITELLM-IMPORT {time.process_time() - started}\\n")
    sys.stderr.flush()
    return module
llm.litellm_module = litellm_module
from tau_mcp.harness.cli import main
main()  # what the tau-harness program runs
"""


# cProfile with a CPU clock: where the harness spends CPU, not where it waits.
PROFILED = """
import cProfile, sys, time
profile = cProfile.Profile(time.process_time)
profile.enable()
try:
    from tau_mcp.harness.cli import app
    app()
except SystemExit:
    pass
finally:
    profile.disable()
    profile.dump_stats({out!r})
"""


@dataclass
class HarnessRun:
    wall: float  # seconds from spawn to exit
    cpu: float  # user + system seconds of the harness process
    rss_mib: int  # peak resident set size of the largest process (rusage)
    tree_pss_mib: int  # peak summed PSS of the driver and its workers (sampled)
    processes: int  # most processes seen in the harness's tree at once
    sampled_cpu: float  # CPU of the tree as last sampled before it ended (a floor)
    bench_cpu: float  # this process's CPU meanwhile: the instant model (and the sampler)
    first_simulation_wall: float | None  # seconds from spawn to the first simulation's start
    first_simulation_cpu: float | None  # CPU seconds spent by then
    litellm_import_cpu: float | None  # CPU seconds its one import of litellm took


def run_harness(command: list[str], env: dict[str, str], model: InstantModel) -> HarnessRun:
    spawned_epoch = time.time()
    spawned = time.perf_counter()
    bench_cpu = time.process_time()
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    model.reset(proc.pid)
    model.spawned = spawned
    sampler = TreeSampler(proc.pid)
    stderr_lines: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr_lines.extend(proc.stderr), daemon=True)
    reader.start()
    # The rusage wait4 returns counts the child and every descendant it reaped (the kernel adds
    # a reaped child's CPU, its own reaped children's included, to its parent's): the driver,
    # its worker spawner and the workers, provided each reaped the next (checked below).
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - spawned
    bench_cpu = time.process_time() - bench_cpu
    sampler.stop()
    proc.returncode = os.waitstatus_to_exitcode(status)
    reader.join(5)
    if proc.returncode != 0:
        tail = b"".join(stderr_lines[-20:]).decode(errors="replace")
        raise SystemExit(f"error: tau-harness exited with {proc.returncode}:\n{tail}")
    first_wall = first_cpu = litellm_cpu = None
    for line in stderr_lines:  # the first (with workers, each prints its own CPU: not used)
        fields = line.split()
        if len(fields) == 3 and fields[0] == b"BENCH-FIRST-SIMULATION" and first_wall is None:
            first_wall, first_cpu = float(fields[1]) - spawned_epoch, float(fields[2])
        elif len(fields) == 2 and fields[0] == b"BENCH-LITELLM-IMPORT" and litellm_cpu is None:
            litellm_cpu = float(fields[1])
    cpu_total = usage.ru_utime + usage.ru_stime
    return HarnessRun(
        wall=wall,
        cpu=cpu_total,
        rss_mib=usage.ru_maxrss // 1024,
        tree_pss_mib=sampler.pss // (1 << 20),
        processes=sampler.processes,
        sampled_cpu=sampler.cpu,
        bench_cpu=bench_cpu,
        first_simulation_wall=first_wall,
        first_simulation_cpu=first_cpu,
        litellm_import_cpu=litellm_cpu,
    )


def count_simulations(path: Path) -> tuple[int, int]:
    """Simulations in a results file and the model replies they hold."""
    data = json.loads(path.read_text(encoding="utf-8"))
    sims = data["simulations"]
    replies = sum(1 for s in sims for m in s["messages"] if m.get("raw_data"))
    return len(sims), replies


def environment(model: InstantModel) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENAI_API_BASE=model.url,
        OPENAI_BASE_URL=model.url,
        OPENAI_API_KEY="fake",
        LITELLM_LOCAL_MODEL_COST_MAP="True",
    )
    return env


def startup(args: argparse.Namespace, model: InstantModel, env: dict[str, str]) -> None:
    """Start-up of a one-simulation run, best of a few: to the first simulation's start (what
    the goal counts: imports, domain loading, server app) and to its first model request."""
    runs = []
    for _ in range(args.startup_runs):
        with tempfile.TemporaryDirectory() as tmp:
            extra = ["--num-tasks", "1", "--num-trials", "1", "--max-concurrency", "1"]
            run = run_harness(harness_command(args, Path(tmp) / "r.json", extra), env, model)
        assert model.first_request is not None, "the harness made no model request"
        runs.append((run, model.first_request - model.spawned, model.first_request_cpu))
    best = min(runs, key=lambda r: r[0].first_simulation_cpu or r[0].cpu)
    run, request_wall, request_cpu = best
    sim_cpu = run.first_simulation_cpu
    met = "met" if sim_cpu is not None and sim_cpu <= GOAL_STARTUP_S else "NOT met"
    print(
        f"start-up to first simulation: CPU {_s(sim_cpu)}, wall {_s(run.first_simulation_wall)} "
        f"(best of {args.startup_runs}; goal <= {GOAL_STARTUP_S} s on a quiet machine, where "
        f"start-up wall = its CPU: {met})"
    )
    print(
        f"start-up to first model request (includes importing litellm): CPU {_s(request_cpu)}, "
        f"wall {_s(request_wall)}; one-simulation run: CPU {run.cpu:.2f} s, wall {run.wall:.2f} s"
    )


def _s(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} s"


def throughput(args: argparse.Namespace, model: InstantModel, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        save_to = Path(tmp) / "results.json"
        extra = [
            "--num-trials",
            str(args.num_trials),
            "--max-concurrency",
            str(args.max_concurrency),
        ]
        if args.num_tasks:
            extra += ["--num-tasks", str(args.num_tasks)]
        if args.workers > 1:
            extra += ["--workers", str(args.workers)]
        run = run_harness(harness_command(args, save_to, extra), env, model)
        sims, replies = count_simulations(save_to)
    requests = model.requests
    per_request = run.cpu * 1000 / max(requests, 1)
    met = "met" if per_request <= GOAL_CPU_MS else "NOT met"
    print(
        f"{args.domain}, max-concurrency {args.max_concurrency}, workers {args.workers}: "
        f"{sims} simulations, {requests} model requests ({replies} replies recorded)"
    )
    print(
        f"  wall {run.wall:.2f} s: {sims / run.wall:.1f} simulations/s, {requests / run.wall:.0f} requests/s"
    )
    if model.first_request is not None:
        steady = run.wall - (model.first_request - model.spawned)
        print(
            f"  after the first model request: {steady:.2f} s, {sims / steady:.1f} simulations/s; "
            f"the instant model (this process) used {run.bench_cpu:.2f} s CPU meanwhile"
        )
    who = "driver + workers" if args.workers > 1 else "harness"
    print(
        f"  {who} CPU {run.cpu:.2f} s: {per_request:.2f} ms per model request all in "
        f"(goal <= {GOAL_CPU_MS} ms: {met})"
    )
    if run.litellm_import_cpu is not None:
        rest = (run.cpu - run.litellm_import_cpu) * 1000 / max(requests, 1)
        met_rest = "met" if rest <= GOAL_CPU_MS else "NOT met"
        print(
            f"  of which importing litellm {run.litellm_import_cpu:.2f} s CPU (once per process, "
            f"{run.litellm_import_cpu * 1000 / max(requests, 1):.2f} ms per request here); "
            f"all the rest {rest:.2f} ms per model request ({met_rest})"
        )
    if model.first_request_cpu is not None:
        steady = (run.cpu - model.first_request_cpu) * 1000 / max(requests - 1, 1)
        print(
            f"  of which start-up {model.first_request_cpu:.2f} s CPU (to the first model request); "
            f"after it {steady:.2f} ms per model request"
        )
    print(
        f"  peak RSS {run.rss_mib} MiB (largest process); peak PSS {run.tree_pss_mib} MiB "
        f"summed over {run.processes} process(es) (sampled)"
    )
    if run.sampled_cpu > run.cpu * 1.02 + 0.05:
        print(
            f"  WARNING: the process tree was seen using {run.sampled_cpu:.2f} s CPU, more than "
            "the rusage total: some worker was not reaped, so its CPU is missing above"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--instant-llm", type=Path, default=Path(os.environ.get("TAU_INSTANT_LLM", DEFAULT_FAKE))
    )
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("TAU2_DATA_DIR", DEFAULT_DATA))
    )
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--num-trials", type=int, default=2)
    parser.add_argument("--num-tasks", type=int, default=None)
    parser.add_argument("--max-concurrency", type=int, default=16, help="e.g. 16 or 256")
    parser.add_argument("--workers", type=int, default=1, help="harness worker processes")
    parser.add_argument("--tool-calls", type=int, default=5, help="agent tool calls per simulation")
    parser.add_argument("--startup-runs", type=int, default=3)
    parser.add_argument("--startup-only", action="store_true")
    parser.add_argument("--skip-startup", action="store_true")
    parser.add_argument("--profile", help="write a CPU-clock cProfile of the harness here (pstats)")
    args = parser.parse_args()
    if not args.instant_llm.is_file():
        raise SystemExit(f"error: no instant model at {args.instant_llm} (use --instant-llm)")
    if not args.data_dir.is_dir():
        raise SystemExit(f"error: no data folder at {args.data_dir} (use --data-dir)")
    args.data_dir = args.data_dir.resolve()
    model = InstantModel(args.instant_llm, args.data_dir, args.tool_calls)
    env = environment(model)
    env["TAU2_DATA_DIR"] = str(args.data_dir)
    if not args.skip_startup:
        startup(args, model, env)
    if not args.startup_only:
        throughput(args, model, env)


if __name__ == "__main__":
    main()
