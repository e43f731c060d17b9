"""How fast does `tau-harness run` say a model's key is missing, and how soon does it say it started?

Runs `tau-harness run` as a child process with no provider keys in its environment and prints,
for each case, the wall time and the child's CPU time until it exited, and its one-line error:

- agent: `--agent llm --user llm` on airline (the agent's key is missing);
- judge: `--agent oracle --user scripted` on retail task 2, graded with the
  NL-assertion judge (the judge's key is missing).

With `--started`, it also runs one real run (airline, oracle agent, scripted user, 5 tasks)
on a terminal (a pseudo-terminal) and in a pipe (a log) and prints how long the child took to
print its first line, what that line was, and when it exited.

    python scripts/bench_fail_fast.py [--repeat 3] [--data-dir ../shared/tau2-data]

Issue 31 item 15's goal is printed next to the figures (under 1 s of CPU), not asserted: the
machine is shared and timings are noisy. Print `uptime` beside them.
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = next((p / "shared" for p in REPO.parents[:2] if (p / "shared").is_dir()), REPO.parent)
GOAL_CPU_S = 1.0
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_API_KEY", "GEMINI_API_KEY")

CASES = {
    "agent": ["--domain", "airline", "--agent", "llm", "--user", "llm", "--num-tasks", "2"],
    "judge": ["--domain", "retail", "--agent", "oracle", "--user", "scripted", "--task-ids", "2"],
}


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float, float | None, str, int]:
    """Wall seconds, child CPU seconds, seconds to the first output line, the last stderr line
    and the exit code of one child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "tau_mcp.harness", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert child.stdout is not None
    first: float | None = None
    lines = []
    for line in child.stdout:
        if first is None and line.strip():
            first = time.perf_counter() - start
        lines.append(line.rstrip())
    code = child.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = next((line for line in reversed(lines) if line.strip()), "")
    return wall, cpu, first, last, code


def on_terminal(args: list[str], env: dict[str, str]) -> tuple[float | None, str, float, int]:
    """Seconds to the first line a child prints on a pseudo-terminal, that line, the seconds
    to its exit and its exit code."""
    main_fd, child_fd = pty.openpty()
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "tau_mcp.harness", *args], env=env, stdout=child_fd, stderr=child_fd
    )
    os.close(child_fd)
    seen, first = b"", None
    while True:
        try:
            chunk = os.read(main_fd, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        seen += chunk
        if first is None and b"\n" in seen:
            first = time.perf_counter() - start
    code = child.wait()
    os.close(main_fd)
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", seen.decode(errors="replace"))
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return first, line, time.perf_counter() - start, code


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=SHARED / "tau2-data")
    parser.add_argument("--started", action="store_true", help="also time a real mock run")
    options = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k not in KEYS}
    env.update(LITELLM_LOCAL_MODEL_COST_MAP="True", COLUMNS="200")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} (1 and 5 min)")
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in CASES.items():
            runs = []
            for i in range(options.repeat):
                save_to = Path(tmp) / f"{name}{i}.json"
                more = ["--data-dir", str(options.data_dir), "--save-to", str(save_to)]
                runs.append(timed(["run", *args, *more], env))
            walls = sorted(r[0] for r in runs)
            cpus = sorted(r[1] for r in runs)
            wall, cpu, _, last, code = runs[-1]
            print(
                f"{name} key missing: wall median {walls[len(walls) // 2]:.2f} s, CPU median "
                f"{cpus[len(cpus) // 2]:.2f} s (goal < {GOAL_CPU_S:.0f} s CPU), exit {code}, "
                f"results file left: {save_to.exists()}"
            )
            print(f"  says: {last}")
        if options.started:
            args = ["run", "--domain", "airline", "--agent", "oracle", "--user", "scripted"]
            args += ["--num-tasks", "5", "--data-dir", str(options.data_dir)]
            first, line, wall, code = on_terminal([*args, "--save-to", f"{tmp}/t.json"], env)
            print(
                f"terminal: first line after {first or 0:.2f} s ({line!r}); exit {code} after {wall:.2f} s"
            )
            wall, cpu, first, _, code = timed([*args, "--save-to", f"{tmp}/p.json"], env)
            print(
                f"log (pipe): first line after {first or 0:.2f} s; exit {code} after {wall:.2f} s"
            )


if __name__ == "__main__":
    main()
