"""The diagnosis's DB evidence from changed records equals the evidence from whole snapshots.

The grader compares the final and gold states through `Episode.changed_records()` (a few
records) instead of two full snapshots; `tau_mcp.grading.db_diff.diff_changes` must give exactly the rows
`diff_states` gives on the snapshots, in the same order. Checked on failing trajectories of every
domain (random prefixes of gold plans, perturbed arguments, repeated and foreign writes), on
hand-made edits the tools never make (deleted records, new records in unsorted order, a table
replaced as a whole, records that do not name their keys), and over HTTP.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tau_mcp.grading import Grader
from tau_mcp.grading.db_diff import diff_changes, diff_states, limited
from tau_mcp.grading.gold import gold_changes_of, gold_episode
from tau_mcp.harness.backends import EpisodeOptions
from tau_mcp.servers.domains.mock.models import Task as MockTask
from tau_mcp.servers.engine.episode import Episode
from tests.support.data import DEMO_DIR
from tests.support.engine_backend import EngineBackend
from tests.support.harness import load, mcp_backend
from tests.support.server import serving

DOMAINS = ("mock", "airline", "retail", "telecom", "banking_knowledge")
TASKS_PER_DOMAIN = 40
TRAJECTORIES_PER_TASK = 3
ALL_ROWS = 10**9
FAILED_DB = {"db_check": {"db_match": False, "db_reward": 0.0}}


def roundtrip(value: Any) -> Any:
    """As it arrives over HTTP."""
    return json.loads(json.dumps(value))


def full_rows(domain, live: Episode, gold: Episode) -> list[dict]:
    """The snapshot diff, in the view the DB hash compares (telecom renames new bills)."""
    view = domain.spec.hash_view
    got, expected = live.snapshot(), gold.snapshot()
    if view is not None:
        got, expected = view(gold, got), view(gold, expected)
    return diff_states(got, expected, limit=ALL_ROWS)[0]


def _perturbed(value: Any, rng: random.Random, pool: list[str]) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        roll = rng.random()
        if roll < 0.5 and pool:
            return rng.choice(pool)
        return value + "x" if roll < 0.8 else value[:-1]
    if isinstance(value, int | float):
        return value + rng.choice([1, -1, 10])
    if isinstance(value, list) and value:
        items = list(value)
        i = rng.randrange(len(items))
        items[i] = _perturbed(items[i], rng, pool)
        return items
    return value


def trajectories(task, others: list, rng: random.Random, count: int):
    """Calls that mostly fail the task: a random prefix of its gold plan (or all of it), some
    arguments perturbed, some calls repeated or dropped, writes of other tasks mixed in."""
    actions = list(task.evaluation_criteria.actions)
    pool = [v for a in actions for v in (a.arguments or {}).values() if isinstance(v, str)]
    for _ in range(count):
        plan = actions[: rng.randint(0, len(actions))] if rng.random() < 0.5 else actions
        calls = []
        for action in plan:
            arguments = dict(action.arguments or {})
            if arguments and rng.random() < 0.4:
                key = rng.choice(list(arguments))
                arguments[key] = _perturbed(arguments[key], rng, pool)
            call = {"requestor": action.requestor, "name": action.name, "arguments": arguments}
            calls.append(call)
            if rng.random() < 0.1:
                calls.append(call)
        if calls and rng.random() < 0.3:
            calls.pop(rng.randrange(len(calls)))
        for _ in range(rng.choice([0, 0, 1, 2])):
            other = rng.choice(others)
            call = {"requestor": other.requestor, "name": other.name}
            calls.insert(rng.randint(0, len(calls)), call | {"arguments": other.arguments or {}})
        yield calls


class CountingBackend(EngineBackend):
    """The engine backend, counting which state reads the grader made."""

    def __init__(self, domains) -> None:
        super().__init__(domains)
        self.reads = {"changed_records": 0, "state": 0}

    async def changed_records(self, ref):
        self.reads["changed_records"] += 1
        return roundtrip(await super().changed_records(ref))

    async def state(self, ref):
        self.reads["state"] += 1
        return roundtrip(await super().state(ref))


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.needs_data(name)) for name in DOMAINS]
)
async def test_changed_records_give_the_snapshot_rows(name):
    domain = load(name)
    backend = CountingBackend({name: domain})
    grader = Grader(backend, domain)
    rng = random.Random(f"db-diff-{name}")
    tasks = [
        t for t in domain.tasks.values() if t.evaluation_criteria and t.evaluation_criteria.actions
    ][:TASKS_PER_DOMAIN]
    others = [a for t in tasks for a in t.evaluation_criteria.actions]
    partial_path = domain.spec.hash_view is None
    # banking_knowledge's default retrieval config needs a key; its state does not depend on it
    options = EpisodeOptions("no_knowledge") if name == "banking_knowledge" else None
    checked = failing = 0
    for task in tasks:
        gold = gold_episode(domain, task)
        gold_view = gold_changes_of(domain, task)
        for calls in trajectories(task, others, rng, TRAJECTORIES_PER_TASK):
            ref = await backend.create_episode(name, task.id, options)
            await backend.replay(ref, calls, only_mutating=False)
            live = backend.store.get(name, ref.episode_id)
            expected = full_rows(domain, live, gold)
            if partial_path:
                rows = diff_changes(
                    roundtrip(live.changed_records()),
                    roundtrip(gold_view.records),
                    gold_view.bases,
                )
                assert rows is not None, (task.id, calls)
                assert roundtrip(rows) == roundtrip(expected), (task.id, calls)
            graded = await grader._db_diff(task, FAILED_DB, ref)
            assert roundtrip(graded) == roundtrip(limited(expected)), (task.id, calls)
            await backend.delete_episode(ref)
            checked += 1
            failing += bool(expected)
    assert checked == len(tasks) * TRAJECTORIES_PER_TASK and len(tasks) >= 5
    assert failing >= checked // 2  # most trajectories did fail, with evidence to show
    # Telecom compares what its hash compares (new bills renamed): snapshots, which are small.
    if partial_path:
        assert backend.reads == {"changed_records": checked, "state": 0}
    else:
        assert backend.reads == {"changed_records": 0, "state": checked}


# --- edits the tools never make, on the bundled demo data ---------------------------------------
@pytest.fixture
def demo():
    domain = load("mock", DEMO_DIR)
    task = domain.task("demo_create")
    return domain, task


def both_ways(domain, live: Episode, gold: Episode) -> tuple[list | None, list]:
    bases = {"agent_db": gold.agent_db.base, "user_db": gold.user_db.base}
    partial = diff_changes(
        roundtrip(live.changed_records()), roundtrip(gold.changed_records()), bases
    )
    return partial, full_rows(domain, live, gold)


def test_deleted_and_new_records_in_the_snapshot_order(demo):
    domain, task = demo
    live, gold = Episode(domain, "live", task), Episode(domain, "gold", task)
    for episode, added in ((live, ("t_z", "t_b", "t_m")), (gold, ("t_m", "t_q", "t_a"))):
        for key in added:
            episode.agent_db.tasks[key] = MockTask(task_id=key, title=key, status="pending")
    del live.agent_db.tasks["task_2"]
    del gold.agent_db.tasks["task_1"]
    gold.agent_db.tasks["task_3"].status = "completed"
    _ = live.agent_db.users["ana"]  # read only: no change
    partial, full = both_ways(domain, live, gold)
    assert partial == full
    order = [(r["id"], r["field"]) for r in full]
    # the gold table's records (base keys in the base's order, then its new ones as added;
    # t_m is the same on both sides), then those only the final table has
    assert order == [
        ("task_2", None),
        ("task_3", "status"),
        ("t_q", None),
        ("t_a", None),
        ("task_1", None),
        ("t_z", None),
        ("t_b", None),
    ]
    assert set(live.changed_records()["agent_db"]["tables"]) == {"tasks"}


def test_a_table_replaced_as_a_whole_falls_back_to_snapshots(demo):
    domain, task = demo
    live, gold = Episode(domain, "live", task), Episode(domain, "gold", task)
    live.agent_db.tasks = {"only": MockTask(task_id="only", title="x", status="pending")}
    assert "tasks" in live.changed_records()["agent_db"]["fields"]
    partial, full = both_ways(domain, live, gold)
    assert partial is None and full


def test_records_that_do_not_name_their_keys_fall_back(demo):
    domain, task = demo
    live, gold = Episode(domain, "live", task), Episode(domain, "gold", task)
    live.agent_db.tasks["task_9"] = MockTask(task_id="other", title="x", status="pending")
    partial, full = both_ways(domain, live, gold)
    assert partial is None and full
    # when neither side has such a record, the rows come from the changed records
    live2 = Episode(domain, "live2", task)
    live2.agent_db.tasks["task_9"] = MockTask(task_id="task_9", title="x", status="pending")
    partial, full = both_ways(domain, live2, gold)
    assert (
        partial
        == full
        == [
            {
                "db": "agent_db",
                "table": "tasks",
                "id": "task_9",
                "field": None,
                "got": {
                    "task_id": "task_9",
                    "title": "x",
                    "description": None,
                    "status": "pending",
                },
                "expected": None,
            }
        ]
    )


async def test_grader_reads_snapshots_without_the_changes_read(demo):
    domain, task = demo

    class StateOnly:
        def __init__(self) -> None:
            self.inner = EngineBackend({"mock": domain})

        async def state(self, ref):
            return await self.inner.state(ref)

    backend = StateOnly()
    ref = await backend.inner.create_episode("mock", task.id)
    await backend.inner.replay(
        ref,
        [
            {
                "requestor": "assistant",
                "name": "create_task",
                "arguments": {"user_id": "chidi", "title": "Wrong title"},
            }
        ],
        only_mutating=False,
    )
    grader = Grader(backend, domain)  # type: ignore[arg-type]
    rows, more = await grader._db_diff(task, FAILED_DB, ref)
    # the same minted id on both sides: one field differs
    assert more == 0 and [(r["table"], r["field"], r["got"], r["expected"]) for r in rows] == [
        ("tasks", "title", "Wrong title", "Book flights to Lagos")
    ]


# --- over HTTP -----------------------------------------------------------------------------------
async def test_changes_route_and_http_backend(demo):
    domain, task = demo
    async with mcp_backend(domain) as backend:
        ref = await backend.create_episode("mock", task.id)
        session = await backend.open_session(ref, "agent")
        await session.call_tool("create_task", {"user_id": "chidi", "title": "Wrong title"})
        changed = await backend.changed_records(ref)
        assert changed["user_db"] == {"tables": {}, "fields": {}}
        tables = changed["agent_db"]["tables"]
        assert set(tables) == {"tasks", "users"}
        [(key, record)] = tables["tasks"].items()
        assert record["title"] == "Wrong title" and record["task_id"] == key
        assert tables["users"]["chidi"]["tasks"][-1] == key
        # the grader's evidence over HTTP equals the snapshots'
        grader = Grader(backend, domain)
        gold = gold_episode(domain, task)
        state = await backend.state(ref)
        expected = diff_states(state, roundtrip(gold.snapshot()))
        assert await grader._db_diff(task, FAILED_DB, ref) == expected
        await session.close()
        await backend.delete_episode(ref)
        # an episode the server does not know: no changes (the caller reads the state, a 404)
        assert await backend.changed_records(ref) is None


async def test_changes_route_is_guarded():
    async with serving(["mock"], DEMO_DIR, token="s3cret", lazy_mcp=True) as srv:
        auth = {"Authorization": "Bearer s3cret"}
        async with srv.http(headers=auth) as http:
            created = (await http.post("/mock/episodes", json={"task_id": "demo_create"})).json()
            path = f"/mock/episodes/{created['episode_id']}/changes"
            assert (await http.get(path)).json() == {
                "agent_db": {"tables": {}, "fields": {}},
                "user_db": {"tables": {}, "fields": {}},
            }
            assert (await http.get(path, headers={"host": "evil.example"})).status_code == 421
            missing = await http.get("/mock/episodes/nope/changes")
            assert missing.status_code == 404 and "nope" in missing.json()["error"]
        async with srv.http() as anonymous:
            assert (await anonymous.get(path)).status_code == 401


async def test_gold_changes_come_from_the_gold_episode_of_the_hashes(demo):
    domain, task = demo
    grader = Grader(EngineBackend({"mock": domain}), domain)
    hashes = await grader.gold_hashes(task)
    assert len(grader._gold_episodes) == 1  # kept for a failure's diagnosis
    kept = grader.gold_changes(task)
    assert len(grader._gold_episodes) == 0 and grader.gold_changes(task) is kept
    fresh = gold_changes_of(domain, task)
    assert kept.records == fresh.records and kept.records["agent_db"]["tables"]["tasks"]
    assert kept.bases == fresh.bases
    assert hashes == gold_episode(domain, task).hashes()
