"""Engine benchmark: base build, episode creation, tool calls, memory per live episode, hashing.

    python scripts/bench_engine.py [--domain airline] [--episodes 2000] [--data-dir DIR]

Times are CPU seconds of this process (`time.process_time`), which the other jobs on a shared
machine disturb less than wall time. Goals: creation p50 <= 5 ms (banking_knowledge and the
τ-bench domains: 0.5 ms), a tool call p50 <= 0.1 ms (τ-bench), <= 100 KB retained per live
episode after one write, snapshot plus hash <= 50 ms. A domain with retrieval configs
(banking_knowledge) also gets its retrieval tools timed: KB_search p50 <= 0.1 ms, grep p50 <= 1
ms, indexes built once per process. The τ-bench domains (`tau-bench-retail`,
`tau-bench-airline`) read their data from $TAUBENCH_DATA_DIR.

When the reference implementation is importable, its figures for the same task and calls are
printed beside ours: tau2-bench (installed from its source: PyPI's `tau2` is another package),
or for the τ-bench domains the original τ-bench (its source on PYTHONPATH, e.g. an export of
sierra-research/tau-bench, with LITELLM_LOCAL_MODEL_COST_MAP=True).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import statistics
import time
import tracemalloc
from collections.abc import Callable

from tau_mcp.grading.gold import gold_hashes_of
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.data import resolve_data_dir
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode, EpisodeStore
from tau_mcp.servers.engine.errors import UnknownDomain

cpu = time.process_time
CREATION_GOAL_MS = {"banking_knowledge": 0.5, "tau-bench-retail": 0.5, "tau-bench-airline": 0.5}
TOOL_CALL_GOAL_MS = {"tau-bench-retail": 0.1, "tau-bench-airline": 0.1}
TAU_BENCH = ("tau-bench-retail", "tau-bench-airline")


def load_domain(name: str, data_dir: str | None) -> Domain:
    """A registered domain, or one of the τ-bench domains (not in the registry's list yet)."""
    try:
        return load_domains([name], data_dir)[name]
    except UnknownDomain:
        if name not in TAU_BENCH:
            raise
    spec = importlib.import_module(f"tau_mcp.servers.domains.{name.replace('-', '_')}").SPEC
    return Domain(spec, resolve_data_dir(data_dir))


def first_write(store: EpisodeStore, domain: str) -> tuple[str, list]:
    """A task of the default split and its gold actions up to and including the first write."""
    dom = store.domain(domain)
    for task_id in dom.task_ids(dom.default_split):
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
    raise SystemExit(f"no {dom.default_split} task of {domain} has a write action")


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


def with_initial_state(domain: Domain, fallback: str) -> str:
    """A task whose initial state changes the database (creation has work to do)."""
    for task_id in domain.task_ids(domain.default_split):
        state = domain.task(task_id).initial_state
        if state is not None and (state.initialization_data or state.initialization_actions):
            return task_id
    return fallback


def bench_creation(store: EpisodeStore, name: str, task_id: str, n: int) -> None:
    goal = CREATION_GOAL_MS.get(name, 5)
    create = []
    for i in range(n):
        create.append(timed(lambda i=i: store.create(name, task_id, f"c{i}")))
        store.delete(name, f"c{i}")
    print(f"episode creation: {ms(create)}  (goal p50 <= {goal} ms)")
    initialized = with_initial_state(store.domain(name), task_id)
    if initialized != task_id:
        create = []
        for i in range(n):
            create.append(timed(lambda i=i: store.create(name, initialized, f"c{i}")))
            store.delete(name, f"c{i}")
        print(f"episode creation, task {initialized} (initial state to set up): {ms(create)}")

    domain, task = store.domain(name), store.domain(name).task(initialized)
    try:
        uncached = [
            timed(lambda: Episode(domain, "x", task, use_start_cache=False)) for _ in range(n)
        ]
    except TypeError:  # an engine without a start cache: creation above is uncached already
        return
    print(f"episode creation without the start cache, task {initialized}: {ms(uncached)}")


def retrieval_queries(domain: Domain) -> tuple[list[str], list[str]]:
    """Queries as an agent of the domain's tasks would send them: the title of each task's
    first required document (KB_search) and the first discoverable tool its gold actions call
    (grep), each once."""
    searches: dict[str, None] = {}
    patterns: dict[str, None] = {}
    for task_id in domain.task_ids(None):
        task = domain.task(task_id)
        required = (task.model_extra or {}).get("required_documents") or []
        if required:
            doc = domain.variants.base.lookup(required[0])
            searches[doc.title if doc else required[0]] = None
        actions = task.evaluation_criteria.actions if task.evaluation_criteria else None
        for action in actions or []:
            tool_name = action.arguments.get("agent_tool_name")
            if isinstance(tool_name, str):
                patterns[tool_name] = None
                break
    return list(searches), list(patterns)


def bench_retrieval(store: EpisodeStore, name: str) -> None:
    """The retrieval tools as an agent calls them, through `Episode.call` (bm25_grep)."""
    domain = store.domain(name)
    catalog = domain.variants
    variant = domain.resolve_variant("bm25_grep")
    episode = store.create(name, None, "retrieval", variant=variant)
    searches, patterns = retrieval_queries(domain)
    build = timed(lambda: episode.call("agent", "KB_search", {"query": "warm up"}))
    build_grep = timed(lambda: episode.call("agent", "grep", {"pattern": "warm up"}))
    print(
        f"retrieval indexes (once per process): BM25 {build * 1000:.0f} ms, "
        f"grep {build_grep * 1000:.0f} ms CPU; configs offline here: {', '.join(catalog.offline())}"
    )
    task_id = domain.task_ids(domain.default_split)[0]
    create = []
    for i in range(500):
        create.append(timed(lambda i=i: store.create(name, task_id, f"v{i}", variant=variant)))
        store.delete(name, f"v{i}")
    print(f"episode creation with bm25_grep (its tools added): {ms(create)}  (goal p50 <= 0.5 ms)")
    for tool, key, queries, goal in (
        ("KB_search", "query", searches, "0.1"),
        ("grep", "pattern", patterns, "1"),
    ):
        times = [
            timed(lambda t=tool, k=key, q=q: episode.call("agent", t, {k: q})) for q in queries
        ]
        print(f"{tool} ({len(queries)} distinct queries): {ms(times)}  (goal p50 <= {goal} ms)")
    store.delete(name, "retrieval")


def bench_gold_hashes(domain: Domain) -> None:
    """What the grader pays per task for the gold state: setup, gold actions, hashes."""
    tasks = [domain.task(t) for t in domain.task_ids(domain.default_split)]
    first = timed(lambda: [gold_hashes_of(domain, task) for task in tasks])
    again = timed(lambda: [gold_hashes_of(domain, task) for task in tasks])
    print(
        f"gold hashes of the {len(tasks)} {domain.default_split} tasks: first pass "
        f"{first * 1000:.0f} ms, second pass {again * 1000:.0f} ms CPU"
    )


def bench_reward(store: EpisodeStore, name: str, task_id: str, actions: list, n: int) -> None:
    """What grading one finished episode costs at most: its task's gold state rebuilt (a grader
    does it once per task) and both states hashed, with the hash memos cleared."""
    domain = store.domain(name)
    task = domain.task(task_id)
    times = []
    for i in range(n):
        episode = store.create(name, task_id, f"r{i}")
        play(episode, actions)
        forget_hashes(domain)
        times.append(timed(lambda e=episode: (gold_hashes_of(domain, task), e.hashes())))
        store.delete(name, f"r{i}")
    print(f"reward inputs of a finished episode (gold state rebuilt, hashes cold): {ms(times)}")


def gold_calls(domain: Domain, tasks: int) -> list[tuple[str, list]]:
    """(task id, gold actions) of the first tasks of the default split."""
    out = []
    for task_id in domain.task_ids(domain.default_split)[:tasks]:
        criteria = domain.task(task_id).evaluation_criteria
        out.append((task_id, (criteria.actions if criteria else None) or []))
    return out


def bench_tool_calls(store: EpisodeStore, name: str, tasks: int) -> list[tuple[str, list]]:
    """Every gold action of the first tasks, each on a fresh episode of its task, timed one
    call at a time through `Episode.call` (reads and writes alike, as an agent makes them)."""
    domain = store.domain(name)
    plans = gold_calls(domain, tasks)
    kinds = {n: s.mutates for n, s in domain.spec.agent_tools.specs.items()}
    times: dict[bool, list[float]] = {False: [], True: []}
    for task_id, actions in plans:
        episode = store.create(name, task_id, "calls")
        for action in actions:
            side = "user" if action.requestor == "user" else "agent"
            spent = timed(lambda a=action, s=side, e=episode: e.call(s, a.name, a.arguments))
            times[kinds.get(action.name, False)].append(spent)
        store.delete(name, "calls")
    both = times[False] + times[True]
    goal = TOOL_CALL_GOAL_MS.get(name)
    wanted = f"  (goal p50 <= {goal} ms)" if goal is not None else ""
    print(f"tool call ({len(both)} gold calls of {len(plans)} tasks): {ms(both)}{wanted}")
    print(f"  reads: {ms(times[False])}; writes: {ms(times[True])}")
    return plans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    name = args.domain

    start = cpu()
    store = EpisodeStore({name: load_domain(name, args.data_dir)}, capacity=10**9)
    domain = store.domain(name)
    domain.load()
    loaded = cpu()
    domain.warm()
    print(
        f"load {name}: {(loaded - start) * 1000:.0f} ms; base canonical build (warm): "
        f"{(cpu() - loaded) * 1000:.0f} ms CPU (once per process)"
    )
    if domain.variants is not None:
        bench_retrieval(store, name)
    task_id, actions = first_write(store, name)
    print(f"task {task_id}: {len(actions)} gold actions up to the first write ({actions[-1].name})")

    bench_creation(store, name, task_id, args.episodes)
    plans = bench_tool_calls(store, name, 50)
    bench_hashing(store, name, task_id, actions, min(args.episodes, 300))
    bench_gold_hashes(domain)
    bench_reward(store, name, task_id, actions, min(args.episodes, 100))

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
    print(f"snapshot + hash: {ms(snap)}  (goal <= 50 ms)")
    if name in TAU_BENCH:
        original_figures(domain, task_id, actions, plans)
    else:
        reference_figures(domain, task_id, actions, min(args.episodes, 200))


# --- the reference, side by side ----------------------------------------------------------------
def _reference_environment(name: str, task) -> Callable[[], object]:
    """A constructor of the reference's environment for `task`, as its runner builds it."""
    from tau2.registry import registry  # noqa: PLC0415 - optional, and slow to import

    constructor = registry.get_env_constructor(name)
    kwargs: dict = {}
    if name == "banking_knowledge":
        names = {
            (a.arguments or {}).get("agent_tool_name")
            for a in (task.evaluation_criteria.actions or [])
            if a.name == "call_discoverable_agent_tool"
        }
        kwargs = {"retrieval_variant": "no_knowledge", "read_log_allowlist": names - {None}}

    def build():
        from tau2.data_model.tasks import Task as ReferenceTask  # noqa: PLC0415

        env = constructor(**kwargs)
        reference_task = ReferenceTask.model_validate(task.model_dump(mode="json"))
        state = reference_task.initial_state
        if state is not None:
            env.set_state(
                state.initialization_data, state.initialization_actions, state.message_history or []
            )
        return env

    return build


def reference_figures(domain: Domain, task_id: str, actions: list, n: int) -> None:
    """The reference's creation time, memory per live environment and hash time, when its
    package is importable here; else say so."""
    try:
        import tau2.registry  # noqa: F401, PLC0415
    except ImportError:
        print(
            "reference: not importable here (tau2-bench v1.0.1 installed from its source is "
            "needed; PyPI's `tau2` is an unrelated package), so no side-by-side figures"
        )
        return
    build = _reference_environment(domain.name, domain.task(task_id))
    create = [timed(build) for _ in range(min(n, 50))]
    print(f"reference environment creation: {ms(create)}")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    live = []
    for _ in range(min(n, 50)):
        env = build()
        for action in actions:
            try:
                env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
            except Exception:  # noqa: BLE001, S110 - the reference's own failures count too
                pass
        live.append(env)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"reference retained per live environment: {(after - before) / len(live) / 1024:.1f} KB")
    hashes = [timed(lambda e=e: (e.get_db_hash(), e.get_user_db_hash())) for e in live]
    print(f"reference DB hashes (agent + user): {ms(hashes)}")


# --- the original τ-bench, side by side ---------------------------------------------------------
class _QuietUser:
    """Stands in for the original's simulated user (no model is called)."""

    def reset(self, instruction=None) -> str:
        return "Hi, I need help."

    def step(self, content: str) -> str:
        return "###STOP###"

    def get_total_cost(self) -> float:
        return 0.0


def original_figures(domain: Domain, task_id: str, actions: list, plans: list) -> None:
    """The original τ-bench's figures for the same task and calls, when its source is
    importable here: a task's reset (it reloads the whole data), a tool call (`env.step`),
    memory per live environment, the data hash and the reward."""
    try:
        from tau_bench.envs import get_env  # noqa: PLC0415 - optional, slow to import
        from tau_bench.types import Action  # noqa: PLC0415
    except ImportError:
        print(
            "original τ-bench: not importable here (put an export of sierra-research/tau-bench "
            "on PYTHONPATH), so no side-by-side figures"
        )
        return
    env_name = domain.spec.folder_name
    split, index = task_id.rsplit("_", 1)

    def fresh(task: int):
        env = get_env(env_name, "human", None, split, task_index=task)
        env.user = _QuietUser()
        return env

    env = fresh(int(index))
    resets = [timed(lambda: env.reset(task_index=int(index))) for _ in range(20)]
    print(f"original: task reset (reloads the data): {ms(resets)}")
    calls = []
    for plan_id, plan in plans:
        env.reset(task_index=int(plan_id.rsplit("_", 1)[1]))
        for action in plan:
            step = Action(name=action.name, kwargs=action.arguments)
            calls.append(timed(lambda a=step: env.step(a)))
    print(f"original: tool call ({len(calls)} gold calls of {len(plans)} tasks): {ms(calls)}")
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    live = []
    for _ in range(5):
        one = fresh(int(index))
        one.reset(task_index=int(index))
        for action in actions:
            one.step(Action(name=action.name, kwargs=action.arguments))
        live.append(one)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"original: retained per live environment: {(after - before) / len(live) / 1024:.1f} KB")
    hashes = [timed(live[0].get_data_hash) for _ in range(10)]
    print(f"original: data hash: {ms(hashes)}")
    # Its reward reloads the data, replays the gold actions and hashes twice, every episode.
    rewards = [timed(one.calculate_reward) for one in live]
    print(f"original: reward of a finished episode: {ms(rewards)}")


if __name__ == "__main__":
    main()
