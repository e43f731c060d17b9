"""Does importing litellm in a thread while a run loads its data save time?

Each trial is a fresh interpreter that does what `tau_mcp.run` does before its first model
request: read the domain's data, open the in-process backend and import litellm, either one
after the other or with the import in a daemon thread meanwhile. Trials alternate between the
two ways; the script prints the median wall and CPU time to "ready for the first request" of
each, and the load. (Measured for issue 31 item 15: the thread saved nothing, as the import and
the loading are both Python code holding the GIL, and imports racing in two threads risk a
partly initialised module; `tau_mcp.run` imports litellm at the first request.)

    python scripts/bench_import_overlap.py [--trials 5] [--domain airline]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import asyncio, json, sys, threading, time
wall, cpu = time.perf_counter(), time.process_time()
from tau_mcp.conversation.llm import litellm_module
from tau_mcp.harness.wiring import load_domain, load_now, open_backend

domain = load_domain(sys.argv[1], None, "lazy")
if sys.argv[2] == "thread":
    threading.Thread(target=litellm_module, daemon=True).start()
load_now(domain)

async def ready():
    backend = await open_backend(domain, None, None)
    litellm_module()  # what the first request does
    await backend.close()

asyncio.run(ready())
print(json.dumps([time.perf_counter() - wall, time.process_time() - cpu]))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--domain", default="airline")
    options = parser.parse_args()
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    times: dict[str, list[tuple[float, float]]] = {"sequential": [], "thread": []}
    print(f"load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for _ in range(options.trials):
        for way in times:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, options.domain, way],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            ).stdout
            times[way].append(tuple(json.loads(out.strip().splitlines()[-1])))
    for way, runs in times.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        print(f"{way:>10}: ready for the first request after {wall:.2f} s wall, {cpu:.2f} s CPU "
              f"(median of {len(runs)})")  # fmt: skip
    print(f"load after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
