"""CPU per model call of `conversation.llm.generate`, against the shared instant fake model.

Replays an agent request (system prompt, airline tools) and a user-simulator request recorded in
the conformance fixtures, N times each, and prints the CPU milliseconds per call through the cheap
route (`conversation/direct.py`) and through litellm's full `acompletion` path.

    python scripts/bench_model_call.py [--calls 300] [--instant-llm ../shared/perf/instant_llm.py]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import DEFAULT_DATA, DEFAULT_FAKE, InstantModel  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[2] / "shared/conformance/requests"


def recorded_requests(fixtures: Path) -> tuple[dict, dict]:
    run = json.loads((fixtures / "airline__llm__0__b6589fc6.json").read_text(encoding="utf-8"))
    agent = [r for r in run["requests"] if r["caller"] == "agent"][-1]["body"]
    user = [r for r in run["requests"] if r["caller"] == "user"][0]["body"]
    return agent, user


async def per_call_ms(calls: int, agent: dict, user: dict) -> tuple[float, float]:
    from conversation import llm

    if llm._litellm is None:
        started = time.process_time()
        llm.litellm_module()
        print(f"importing litellm: {time.process_time() - started:.2f} s CPU (once per process)")
    args = {"temperature": 0.0, "seed": 1}
    for _ in range(3):  # warm: connections, routes
        await llm.generate("openai/fake", agent["messages"], tools=agent["tools"], **args)
    started = time.process_time()
    for _ in range(calls):
        await llm.generate("openai/fake", agent["messages"], tools=agent["tools"], **args)
    agent_ms = (time.process_time() - started) * 1000 / calls
    started = time.process_time()
    for _ in range(calls):
        await llm.generate("openai/fake", user["messages"], role="user", **args)
    return agent_ms, (time.process_time() - started) * 1000 / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--instant-llm", type=Path, default=DEFAULT_FAKE)
    parser.add_argument(
        "--data-dir", type=Path, default=Path(os.environ.get("TAU2_DATA_DIR", DEFAULT_DATA))
    )
    parser.add_argument("--fixtures", type=Path, default=FIXTURES)
    options = parser.parse_args()
    model = InstantModel(options.instant_llm, options.data_dir.resolve(), tool_calls=5)
    os.environ.update(
        OPENAI_API_BASE=model.url, OPENAI_API_KEY="fake", LITELLM_LOCAL_MODEL_COST_MAP="True"
    )
    agent, user = recorded_requests(options.fixtures)
    for label, full in (
        ("cheap route (conversation/direct.py)", False),
        ("litellm.acompletion", True),
    ):
        if full:
            os.environ["TAU_LITELLM_FULL_PATH"] = "1"
        agent_ms, user_ms = asyncio.run(per_call_ms(options.calls, agent, user))
        print(
            f"{label}: agent call (14 tools) {agent_ms:.2f} ms CPU, user call {user_ms:.2f} ms CPU"
        )


if __name__ == "__main__":
    main()
