"""Engine benchmark: episode creation, memory per live episode, snapshot + hash.

    python scripts/bench_engine.py [--domain airline] [--episodes 2000] [--data-dir DIR]

Goals (airline): creation p50 <= 5 ms, <= 100 KB retained per live episode after one write,
snapshot plus canonical hash <= 50 ms.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc

from servers.domains.registry import load_domains
from servers.engine.episode import Episode, EpisodeStore


def first_write(store: EpisodeStore, domain: str) -> tuple[str, list]:
    """A base-split task and its gold actions up to and including the first write."""
    dom = store.domain(domain)
    for task_id in dom.task_ids("base"):
        actions = (
            (dom.task(task_id).evaluation_criteria.actions or [])
            if dom.task(task_id).evaluation_criteria
            else []
        )
        prefix = []
        for action in actions:
            prefix.append(action)
            side = "user" if action.requestor == "user" else "agent"
            kit = dom.spec.user_tools if side == "user" else dom.spec.agent_tools
            if kit is not None and action.name in kit.specs and kit.specs[action.name].mutates:
                return task_id, prefix
    raise SystemExit(f"no base task of {domain} has a write action")


def play(episode: Episode, actions: list) -> None:
    for action in actions:
        episode.call(
            "user" if action.requestor == "user" else "agent", action.name, action.arguments
        )


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    t0 = time.perf_counter()
    store = EpisodeStore(load_domains([args.domain], args.data_dir), capacity=10**9)
    domain = store.domain(args.domain)
    domain.warm()
    print(
        f"load + warm {args.domain}: {(time.perf_counter() - t0) * 1000:.0f} ms (once per process)"
    )
    task_id, actions = first_write(store, args.domain)
    print(f"task {task_id}: {len(actions)} gold actions up to the first write ({actions[-1].name})")

    create_ms = []
    for i in range(args.episodes):
        start = time.perf_counter()
        store.create(args.domain, task_id, f"c{i}")
        create_ms.append((time.perf_counter() - start) * 1000)
        store.delete(args.domain, f"c{i}")
    print(
        f"episode creation: p50 {statistics.median(create_ms):.3f} ms, p95 {percentile(create_ms, 0.95):.3f} ms  (goal p50 <= 5 ms)"
    )

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(args.episodes):
        play(store.create(args.domain, task_id, f"m{i}"), actions)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_episode_kb = (after - before) / args.episodes / 1024
    print(
        f"retained per live episode after one write: {per_episode_kb:.1f} KB over {args.episodes} live episodes  (goal <= 100 KB)"
    )

    snap_ms = []
    for i in range(min(args.episodes, 300)):
        episode = store.get(args.domain, f"m{i}")
        start = time.perf_counter()
        episode.snapshot()
        episode.hashes()
        snap_ms.append((time.perf_counter() - start) * 1000)
    print(
        f"snapshot + canonical hash: p50 {statistics.median(snap_ms):.2f} ms, p95 {percentile(snap_ms, 0.95):.2f} ms  (goal <= 50 ms)"
    )


if __name__ == "__main__":
    main()
