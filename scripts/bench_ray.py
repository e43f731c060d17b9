"""Local versus `--ray`: simulations per second and the driver's peak memory for one large
oracle run, and what each added node would bring.

    python scripts/bench_ray.py [--domain retail] [--trials 9] [--concurrency 16]

Each mode runs `tau-harness run --agent oracle --user scripted` as a child process; the figures
are the child's wall time, CPU time and peak RSS (from the kernel's accounting of the child).
With `--ray` the run starts a local Ray instance (its start-up is included, and printed apart).
On a 2-core machine this shows Ray's overhead, not its speedup; the projection per node uses the
measured CPU cost of one simulation.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(mode: str, args: argparse.Namespace, out: Path) -> dict[str, float]:
    cmd = [
        sys.executable,
        "-m",
        "tau_mcp.harness",
        "run",
        "--domain",
        args.domain,
        "--agent",
        "oracle",
        "--user",
        "scripted",
        "--num-trials",
        str(args.trials),
        "--max-concurrency",
        str(args.concurrency),
        "--judge-llm",
        "none",
        "--save-to",
        str(out),
    ]
    if mode == "ray":
        cmd += ["--ray", args.address]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    started = time.perf_counter()
    child = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"the {mode} run failed (exit {os.waitstatus_to_exitcode(status)})")
    sims = json.loads(out.read_text())["simulations"]
    return {
        "simulations": len(sims),
        "wall_s": wall,
        "driver_cpu_s": usage.ru_utime + usage.ru_stime,
        "driver_peak_rss_mb": usage.ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="retail")
    parser.add_argument("--trials", type=int, default=9, help="retail base: 114 tasks x 9")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--address", default="local", help="Ray address (default: local)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        local = run("local", args, Path(tmp) / "local.json")
        remote = run("ray", args, Path(tmp) / "ray.json")
    cores = os.cpu_count() or 1
    print(
        f"{args.domain}, oracle agent + scripted user, {local['simulations']} simulations, "
        f"max concurrency {args.concurrency}, {cores} cores"
    )
    for name, r in (("local", local), ("ray", remote)):
        print(
            f"{name:>5}: {r['simulations'] / r['wall_s']:7.1f} simulations/s "
            f"({r['wall_s']:.1f} s wall), driver CPU {r['driver_cpu_s']:.1f} s, "
            f"driver peak RSS {r['driver_peak_rss_mb']:.0f} MB"
        )
    per_sim_cpu = local["driver_cpu_s"] / local["simulations"]
    driver_per_sim = remote["driver_cpu_s"] / remote["simulations"]
    print(f"CPU per simulation (local, all in): {per_sim_cpu * 1000:.1f} ms")
    print(
        f"driver CPU per simulation under Ray: {driver_per_sim * 1000:.1f} ms "
        f"(the driver alone saturates at about {1 / driver_per_sim:.0f} simulations/s)"
    )
    print(
        f"projection: each added node of C cores adds about C x {1 / per_sim_cpu:.0f} "
        "oracle simulations/s, up to the driver's ceiling; model-bound runs scale with "
        "provider limits instead"
    )


if __name__ == "__main__":
    main()
