"""CPU per model call of `tau_mcp.conversation.llm.generate`, against the shared instant fake model.

Replays two agent requests (airline system prompt and 14 tools; early in a conversation and after
five tool calls) and a user-simulator request recorded in the conformance fixtures, N times each,
and prints this process's CPU milliseconds per call (best of R rounds) through the cheap route
(`conversation/direct.py`) and through litellm's full `acompletion` path. The fake model runs in
a child process, so its own work is not in the figures.

    python scripts/bench_model_call.py [--calls 300] [--repeats 3]
        [--instant-llm ../shared/perf/instant_llm.py] [--profile out.pstats]
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

from serving import free_port

REPO = Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    """`../shared` of the checkout (a git worktree sits one level deeper than the main one)."""
    for parent in REPO.parents:
        if (parent / "shared/perf/instant_llm.py").exists():
            return parent / "shared"
    return REPO.parent / "shared"


SHARED = shared_dir()


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


# (label, fixture run, caller, which of its requests): an agent request early in a conversation,
# one at its end (after five tool calls and results) and a user-simulator request.
REQUESTS = (
    ("agent call (14 tools, 3 messages)", "airline__llm__0__b6589fc6", "agent", -1),
    ("agent call (14 tools, 13 messages)", "airline__llm__12__7b52009b", "agent", -1),
    ("user call", "airline__llm__0__b6589fc6", "user", 0),
)


def recorded_requests(fixtures: Path) -> dict[str, tuple[dict, str]]:
    """The recorded bodies and the role their reply takes, by label."""
    out = {}
    for label, run_id, caller, index in REQUESTS:
        run = json.loads((fixtures / f"{run_id}.json").read_text(encoding="utf-8"))
        body = [r for r in run["requests"] if r["caller"] == caller][index]["body"]
        out[label] = (body, "user" if caller == "user" else "assistant")
    return out


async def per_call_ms(
    calls: int,
    repeats: int,
    requests: dict[str, tuple[dict, str]],
    profiler: cProfile.Profile | None,
) -> dict[str, float]:
    """CPU ms per `generate()` call for each request: the best of `repeats` rounds of `calls`
    (the machine is shared; the best round is the one least disturbed)."""
    from tau_mcp.conversation import llm

    if llm._litellm is None:
        started = time.process_time()
        llm.litellm_module()
        print(f"importing litellm: {time.process_time() - started:.2f} s CPU (once per process)")
    args = {"temperature": 0.0, "seed": 1}

    async def call(request: tuple[dict, str]) -> None:
        body, role = request
        await llm.generate(
            "openai/fake", body["messages"], tools=body.get("tools"), role=role, **args
        )

    for request in requests.values():  # warm: connections, routes, tool lists
        for _ in range(3):
            await call(request)
    best: dict[str, float] = {}
    if profiler is not None:
        profiler.enable()
    for _ in range(repeats):
        for label, request in requests.items():
            started = time.process_time()
            for _ in range(calls):
                await call(request)
            spent = (time.process_time() - started) * 1000 / calls
            best[label] = min(best.get(label, spent), spent)
    if profiler is not None:
        profiler.disable()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=3)
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
        requests = recorded_requests(options.fixtures)
        for label, full in (
            ("cheap route (conversation/direct.py)", False),
            ("litellm.acompletion", True),
        ):
            if full:
                os.environ["TAU_LITELLM_FULL_PATH"] = "1"
            profiler = None
            if options.profile and not full:
                profiler = cProfile.Profile(time.process_time)
            figures = asyncio.run(per_call_ms(options.calls, options.repeats, requests, profiler))
            if profiler is not None:
                profiler.dump_stats(options.profile)
            print(f"{label}, client CPU per call:")
            for request, ms in figures.items():
                print(f"  {request}: {ms:.3f} ms")
    finally:
        child.terminate()
        child.wait(timeout=10)


if __name__ == "__main__":
    main()
