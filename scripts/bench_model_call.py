"""CPU per model call of `conversation.llm.generate`, against the shared instant fake model.

Replays an agent request (system prompt, airline tools) and a user-simulator request recorded in
the conformance fixtures, N times each, and prints this process's CPU milliseconds per call
through the cheap route (`conversation/direct.py`) and through litellm's full `acompletion` path.
The fake model runs in a child process, so its own work is not in the figures.

    python scripts/bench_model_call.py [--calls 300] [--instant-llm ../shared/perf/instant_llm.py]
        [--profile out.pstats]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """`../shared` of the checkout (a git worktree sits one level deeper than the main one)."""
    for parent in REPO.parents:
        if (parent / "shared/perf/instant_llm.py").exists():
            return parent / "shared"
    return REPO.parent / "shared"


SHARED = shared_dir()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The fake model writes a reply's headers and body in two sends. With Nagle's algorithm on, the
# body waits for the client's (delayed) ACK of the headers: 40 ms per call once Linux leaves
# quick-ACK mode, and a stalled call costs the client more CPU (two reads instead of one). Real
# servers (uvicorn, vLLM) set TCP_NODELAY; so does this wrapper, through the standard library's
# own switch, leaving the shared script as it is.
NO_NAGLE = """
import runpy, socketserver, sys
socketserver.StreamRequestHandler.disable_nagle_algorithm = True
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def start_instant_model(script: Path, data_dir: Path) -> tuple[subprocess.Popen, str]:
    """The fake model in its own process; returns it and its base URL once it accepts."""
    port = free_port()
    argv = [sys.executable, "-c", NO_NAGLE, str(script), "--data-dir", str(data_dir)]
    argv += ["--port", str(port)]
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"error: the instant model exited ({child.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return child, f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(0.02)
    child.kill()
    raise SystemExit("error: the instant model did not start")


def recorded_requests(fixtures: Path) -> tuple[dict, dict]:
    run = json.loads((fixtures / "airline__llm__0__b6589fc6.json").read_text(encoding="utf-8"))
    agent = [r for r in run["requests"] if r["caller"] == "agent"][-1]["body"]
    user = [r for r in run["requests"] if r["caller"] == "user"][0]["body"]
    return agent, user


async def per_call_ms(
    calls: int, agent: dict, user: dict, profiler: cProfile.Profile | None
) -> tuple[float, float]:
    from conversation import llm

    if llm._litellm is None:
        started = time.process_time()
        llm.litellm_module()
        print(f"importing litellm: {time.process_time() - started:.2f} s CPU (once per process)")
    args = {"temperature": 0.0, "seed": 1}
    for _ in range(3):  # warm: connections, routes
        await llm.generate("openai/fake", agent["messages"], tools=agent["tools"], **args)
        await llm.generate("openai/fake", user["messages"], role="user", **args)
    if profiler is not None:
        profiler.enable()
    started = time.process_time()
    for _ in range(calls):
        await llm.generate("openai/fake", agent["messages"], tools=agent["tools"], **args)
    agent_ms = (time.process_time() - started) * 1000 / calls
    started = time.process_time()
    for _ in range(calls):
        await llm.generate("openai/fake", user["messages"], role="user", **args)
    user_ms = (time.process_time() - started) * 1000 / calls
    if profiler is not None:
        profiler.disable()
    return agent_ms, user_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--instant-llm", type=Path, default=SHARED / "perf/instant_llm.py")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get("TAU2_DATA_DIR", SHARED / "tau2-data")),
    )
    parser.add_argument("--fixtures", type=Path, default=SHARED / "conformance/requests")
    parser.add_argument(
        "--profile", type=Path, help="write a CPU-clock cProfile of the cheap route's calls"
    )
    options = parser.parse_args()
    child, url = start_instant_model(options.instant_llm, options.data_dir.resolve())
    try:
        os.environ.update(
            OPENAI_API_BASE=url, OPENAI_API_KEY="fake", LITELLM_LOCAL_MODEL_COST_MAP="True"
        )
        agent, user = recorded_requests(options.fixtures)
        for label, full in (
            ("cheap route (conversation/direct.py)", False),
            ("litellm.acompletion", True),
        ):
            if full:
                os.environ["TAU_LITELLM_FULL_PATH"] = "1"
            profiler = None
            if options.profile and not full:
                profiler = cProfile.Profile(time.process_time)
            agent_ms, user_ms = asyncio.run(per_call_ms(options.calls, agent, user, profiler))
            if profiler is not None:
                profiler.dump_stats(options.profile)
            print(
                f"{label}: agent call (14 tools) {agent_ms:.3f} ms CPU, "
                f"user call {user_ms:.3f} ms CPU"
            )
    finally:
        child.terminate()
        child.wait(timeout=10)


if __name__ == "__main__":
    main()
