"""Engine benchmark: base build, episode creation, memory per live episode, hashing.

    python scripts/bench_engine.py [--domain airline] [--episodes 2000] [--data-dir DIR]

Times are CPU seconds of this process (`time.process_time`), which the other jobs on a shared
machine disturb less than wall time. Goals (airline): creation p50 <= 5 ms, <= 100 KB retained
per live episode after one write, snapshot plus canonical hash <= 50 ms.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable

from grading.gold import gold_hashes_of
from servers.domains.registry import load_domains
from servers.engine.domain import Domain
from servers.engine.episode import Episode, EpisodeStore

cpu = time.process_time


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


def ms(seconds: list[float]) -> str:
    """p50 and p95 of CPU times, in milliseconds."""
    return f"p50 {statistics.median(seconds) * 1000:.3f} ms, p95 {percentile(seconds, 0.95) * 1000:.3f} ms"


def timed(func: Callable[[], object]) -> float:
    start = cpu()
    func()
    return cpu() - start


def forget_hashes(domain: Domain) -> None:
    """Empty the hash memos (so a 'cold' figure is cold); a no-op on engines without them."""
    for base in (domain.base, domain.user_base):
        clear = getattr(base, "clear_hash_memo", None)
        if clear is not None:
            clear()


def bench_hashing(store: EpisodeStore, name: str, task_id: str, actions: list, n: int) -> None:
    domain = store.domain(name)
    untouched = [timed(store.create(name, None, f"u{i}").hashes) for i in range(n)]
    print(f"hash of an untouched episode (no task): {ms(untouched)}")

    cold, warm = [], []
    for i in range(n):
        episode = store.create(name, task_id, f"w{i}")
        play(episode, actions)
        forget_hashes(domain)
        cold.append(timed(episode.hashes))
        warm.append(timed(store.get(name, f"w{i}").hashes))
    print(f"hash after one write, cold: {ms(cold)}")
    print(f"hash after one write, again (memo hit where there is one): {ms(warm)}")
    for i in range(n):
        store.delete(name, f"u{i}")
        store.delete(name, f"w{i}")


def bench_creation(store: EpisodeStore, name: str, task_id: str, n: int) -> None:
    create = []
    for i in range(n):
        create.append(timed(lambda i=i: store.create(name, task_id, f"c{i}")))
        store.delete(name, f"c{i}")
    print(f"episode creation: {ms(create)}  (goal p50 <= 5 ms)")

    domain, task = store.domain(name), store.domain(name).task(task_id)
    try:
        uncached = [
            timed(lambda: Episode(domain, "x", task, use_start_cache=False)) for _ in range(n)
        ]
    except TypeError:  # an engine without a start cache: creation above is uncached already
        return
    print(f"episode creation without the start cache: {ms(uncached)}")


def bench_gold_hashes(domain: Domain) -> None:
    """What the grader pays per task for the gold state: setup, gold actions, hashes."""
    tasks = [domain.task(t) for t in domain.task_ids("base")]
    first = timed(lambda: [gold_hashes_of(domain, task) for task in tasks])
    again = timed(lambda: [gold_hashes_of(domain, task) for task in tasks])
    print(
        f"gold hashes of the {len(tasks)} base tasks: first pass {first * 1000:.0f} ms, "
        f"second pass {again * 1000:.0f} ms CPU"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    name = args.domain

    start = cpu()
    store = EpisodeStore(load_domains([name], args.data_dir), capacity=10**9)
    domain = store.domain(name)
    domain.load()
    loaded = cpu()
    domain.warm()
    print(
        f"load {name}: {(loaded - start) * 1000:.0f} ms; base canonical build (warm): "
        f"{(cpu() - loaded) * 1000:.0f} ms CPU (once per process)"
    )
    task_id, actions = first_write(store, name)
    print(f"task {task_id}: {len(actions)} gold actions up to the first write ({actions[-1].name})")

    bench_creation(store, name, task_id, args.episodes)
    bench_hashing(store, name, task_id, actions, min(args.episodes, 300))
    bench_gold_hashes(domain)

    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(args.episodes):
        play(store.create(name, task_id, f"m{i}"), actions)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    per_episode_kb = (after - before) / args.episodes / 1024
    print(
        f"retained per live episode after one write: {per_episode_kb:.1f} KB over "
        f"{args.episodes} live episodes  (goal <= 100 KB)"
    )

    snap = [
        timed(lambda i=i: (store.get(name, f"m{i}").snapshot(), store.get(name, f"m{i}").hashes()))
        for i in range(min(args.episodes, 300))
    ]
    print(f"snapshot + canonical hash: {ms(snap)}  (goal <= 50 ms)")


if __name__ == "__main__":
    main()
