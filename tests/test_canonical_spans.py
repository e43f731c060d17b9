"""Hashes from the span-indexed base text equal the sha256 of the full canonical text, assembled
record by record (tests/support/canonical_reference.py), whatever an episode did to its state."""

from __future__ import annotations

import hashlib
import random
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.domains.tau_bench.data_hash import DATA_HASH
from tau_mcp.servers.engine import canonical_doc
from tau_mcp.servers.engine.canonical import canonical_fragment, canonical_json, key_json
from tau_mcp.servers.engine.cow import BaseState, CowDB
from tau_mcp.servers.engine.data import DEMO_DIR
from tau_mcp.servers.engine.episode import EpisodeStore
from tests.support import conformance as conf
from tests.support.canonical_reference import reference_hash, reference_text


class Item(BaseModel):
    name: str
    price: float | None = None
    tags: list[str] = []
    meta: dict[str, Any] = {}


class Ledger(BaseModel):
    """A table one level down: records in `rows`, plus plain fields (see cow.py)."""

    cow_records: ClassVar[str] = "rows"

    rows: dict[str, dict[str, Any]] = {}
    notes: str = ""
    owner: str | None = None


class Store(BaseModel):
    items: dict[str, Item]
    maybe: dict[str, Item | None]
    empty: dict[str, Item] = {}
    shelf: list[Item] = []
    note: str | None = None
    title: str = "shop"
    ledger: Ledger = Ledger()


def _store() -> Store:
    items = {
        f"i{n:02d}": Item(
            name=f"item {n} é☃",
            price=[None, 3.0, 2.5, 1e16, -0.0][n % 5],
            tags=["a", "b"][: n % 3],
            meta={"k": None, "n": n, "f": 1.0} if n % 4 == 0 else {},
        )
        for n in range(0, 40, 2)
    }
    maybe = {"m1": Item(name="m1"), "m2": None, "m3": Item(name="m3", price=7.0)}
    ledger = Ledger(
        rows={f"r{n}": {"n": n, "x": None, "f": 2.0} for n in range(0, 10, 2)}, notes="n ☃"
    )
    return Store(items=items, maybe=maybe, shelf=[Item(name="s", price=1.5)], ledger=ledger)


def _check(db: CowDB) -> None:
    assert db.canonical_hash() == reference_hash(db)


@pytest.fixture()
def base() -> BaseState:
    return BaseState(_store())


def test_base_text_is_the_reference_text_and_ascii(base: BaseState) -> None:
    doc = base.canonical
    assert doc.text == reference_text(CowDB(base)).encode("ascii")
    assert doc.text.isascii() and b"\\u00e9" in doc.text
    for name, table in doc.tables.items():
        for i, key in enumerate(table.keys):
            record = base.records(name)[key]
            expected = canonical_json(to_jsonable_python(record))
            assert doc.text[table.value_starts[i] : table.ends[i]].decode() == expected
            assert doc.text[table.starts[i] : table.value_starts[i]].decode() == key_json(key) + ":"
    assert "m2" not in doc.tables["maybe"].index  # a null record is left out
    assert "note" not in doc.fields  # so is a null field


def test_untouched_and_read_only_states_hash_as_the_base(base: BaseState) -> None:
    db = CowDB(base)
    _check(db)
    _ = db.items["i02"], db.items["i04"].price, db.maybe["m1"], db.title, db.shelf
    assert db.items.touched and db.changes() == ()
    assert db.canonical_hash() == base.canonical.base_hash
    _check(db)


@pytest.mark.parametrize(
    "edit",
    [
        lambda db: setattr(db.items["i00"], "name", "first"),
        lambda db: setattr(db.items["i38"], "price", 4.0),
        lambda db: db.items.__setitem__("a", Item(name="before all")),
        lambda db: db.items.__setitem__("i05", Item(name="between", price=0.5)),
        lambda db: db.items.__setitem__("z", Item(name="after all")),
        lambda db: db.items.__delitem__("i00"),
        lambda db: db.items.__delitem__("i38"),
        lambda db: [db.items.__delitem__(k) for k in list(db.items)],
        lambda db: db.items.__setitem__("i10", None),
        lambda db: db.maybe.__setitem__("m2", Item(name="was null")),
        lambda db: db.maybe.__setitem__("m1", None),
        lambda db: db.empty.__setitem__("only", Item(name="x", meta={"deep": [None, 2.0]})),
        lambda db: db.shelf.append(Item(name="t", price=2.0)),
        lambda db: setattr(db, "note", "now set ☃"),
        lambda db: setattr(db, "title", None),
        lambda db: setattr(db, "items", {"q": Item(name="replaced whole")}),
        lambda db: db.ledger.rows["r2"].__setitem__("n", 99),
        lambda db: db.ledger.rows.__setitem__("r1", {"new": True}),
        lambda db: db.ledger.rows.__setitem__("z", {"last": 1.0}),
        lambda db: db.ledger.rows.__delitem__("r0"),
        lambda db: setattr(db.ledger, "notes", "rewritten"),
        lambda db: setattr(db.ledger, "owner", "someone"),
        lambda db: setattr(db.ledger, "rows", {"only": {"a": 1}}),
        lambda db: setattr(db, "ledger", Ledger(rows={"q": {}})),
    ],
)
def test_one_edit_hashes_as_the_full_text(base: BaseState, edit) -> None:
    db = CowDB(base)
    edit(db)
    assert db.changes() != ()
    _check(db)


def test_random_edits_hash_as_the_full_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tiny checkpoints, so hashing resumes mid-text from a saved state.
    monkeypatch.setattr(canonical_doc, "CHECKPOINT_BYTES", 11)
    base = BaseState(_store())
    rng = random.Random(7)
    keys = [f"i{n:02d}" for n in range(41)] + ["a", "zz"]
    for _ in range(60):
        db = CowDB(base)
        for _ in range(rng.randint(1, 6)):
            key, op = rng.choice(keys), rng.random()
            if op < 0.3 and db.items.get(key) is not None:
                db.items[key].tags = [*db.items[key].tags, "x"]
            elif op < 0.5 and key in db.items:
                del db.items[key]
            elif op < 0.6:
                db.items[key] = None
            elif op < 0.9:
                db.items[key] = Item(name=key, price=rng.choice([None, 1.0, 2.25]))
            else:
                _ = db.items.get(key)
            _check(db)


def test_nested_tables_are_copied_record_by_record(base: BaseState) -> None:
    assert base.nested_tables == {"ledger": "rows"}
    db = CowDB(base)
    _ = db.ledger.rows["r2"], db.ledger.notes  # reads copy nothing the hash sees
    assert db.changes() == () and db.snapshot()["ledger"] == base.field_json("ledger")
    db.ledger.rows["r4"]["n"] = -1
    assert db.ledger.rows._own.keys() == {"r2", "r4"}
    assert [name for name, _, _ in db.changes()] == ["ledger"]
    assert db.snapshot()["ledger"]["rows"]["r4"]["n"] == -1
    assert base.model.ledger.rows["r4"]["n"] == 4  # the base is untouched
    _check(db)


def test_nested_table_updates_merge_record_by_record(base: BaseState) -> None:
    db = CowDB(base)
    db.apply_update({"ledger": {"rows": {"r2": {"x": 5}, "new": {"k": "v"}}}})
    rows = db.snapshot()["ledger"]["rows"]
    assert rows["r2"] == {"n": 2, "x": 5, "f": 2.0} and rows["new"] == {"k": "v"}
    assert db.ledger.rows._own.keys() == {"r2", "new"}
    _check(db)
    db.apply_update({"ledger": {"notes": "other"}})  # any other field: the whole value
    assert db.snapshot()["ledger"]["notes"] == "other"
    _check(db)


def test_equal_states_share_one_memo_entry(base: BaseState) -> None:
    first, second = CowDB(base), CowDB(base)
    for db in (first, second):
        db.items["i02"].name = "same change"
        del db.items["i04"]
    assert first.changes() == second.changes()
    digest = first.canonical_hash()
    assert len(base._hash_memo) == 1
    assert second.canonical_hash() == digest == reference_hash(second)
    assert len(base._hash_memo) == 1
    base.clear_hash_memo()
    assert second.canonical_hash() == digest


def test_fast_fragment_matches_the_full_normalization() -> None:
    values = [
        Item(name="plain"),
        Item(name="v1.0}", price=2.0),
        Item(name="n", meta={"a": None, "b": [None, {"c": None}], "e": 1e300}),
        Item(name="ünïcode", price=float("inf")),
        {"x": None},
        [1.0, None, "null"],
        None,
        3.0,
    ]
    for value in values:
        raw = to_jsonable_python(value)
        assert canonical_fragment(value) == (None if raw is None else canonical_json(raw))


def test_mock_domain_both_sides_hash_as_the_full_text() -> None:
    store = EpisodeStore(load_domains(["mock"], DEMO_DIR))
    episode = store.create("mock", "demo_complete")
    episode.call("agent", "create_task", {"user_id": "bo", "title": "New"})
    episode.call("agent", "update_task_status", {"task_id": "task_1", "status": "completed"})
    episode.call("user", "dismiss_notification", {"notification_id": "note_1"})
    assert episode.user_db is not None
    for db in (episode.agent_db, episode.user_db):
        _check(db)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.needs_data(n))
        for n in ("airline", "retail", "banking_knowledge")
    ],
)
def test_real_domains_hash_as_the_full_text_after_their_gold_actions(name: str) -> None:
    domain = load_domains([name], conf.DATA_DIR)[name]
    store = EpisodeStore({name: domain})
    assert domain.base.canonical.text == reference_text(CowDB(domain.base)).encode()
    for task_id in domain.task_ids("base")[:25]:
        episode = store.create(name, task_id)
        criteria = domain.task(task_id).evaluation_criteria
        for action in (criteria.actions if criteria else None) or []:
            side = conf.side_of(action.requestor)
            episode.call(side, action.name, action.arguments)  # type: ignore[arg-type]
        _check(episode.agent_db)


@pytest.mark.needs_data("telecom")
def test_telecom_cow_hashes_match_the_full_text_on_both_sides() -> None:
    domain = load_domains(["telecom"], conf.DATA_DIR)["telecom"]
    store = EpisodeStore({"telecom": domain})
    for task_id in domain.task_ids("base")[:10]:
        episode = store.create("telecom", task_id)
        assert episode.user_db is not None
        for db in (episode.agent_db, episode.user_db):
            _check(db)


# --- another text format: the original τ-bench's data hash (Python's str of sorted tuples) ----
def _tuple_text_hash(db: CowDB) -> str:
    """The original τ-bench's hash of the state, computed in full from its JSON form."""
    return hashlib.sha256(str(_sorted_tuples(db.snapshot())).encode("utf-8")).hexdigest()


def _sorted_tuples(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((key, _sorted_tuples(item)) for key, item in sorted(value.items()))
    if isinstance(value, list):
        return tuple(_sorted_tuples(item) for item in value)
    return value


class OneTable(BaseModel):
    rows: dict[str, dict[str, Any]]


def test_tuple_format_base_text_is_python_str_of_sorted_tuples() -> None:
    base = BaseState(_store(), DATA_HASH)
    db = CowDB(base)
    assert base.canonical.text == str(_sorted_tuples(db.snapshot())).encode("utf-8")
    # One field or one record is a 1-tuple, `(x,)`; no record, `()`.
    for rows in ({"only": {"a": [1]}}, {}, {"a": {}, "b": {"x": None}}):
        single = BaseState(OneTable(rows=rows), DATA_HASH)
        assert single.canonical.text == str(_sorted_tuples({"rows": rows})).encode()


@pytest.mark.parametrize("seed", range(4))
def test_tuple_format_edits_hash_as_the_full_text(seed: int, monkeypatch) -> None:
    monkeypatch.setattr(canonical_doc, "CHECKPOINT_BYTES", 23)
    base = BaseState(_store(), DATA_HASH)
    rng = random.Random(seed)
    keys = [f"i{n:02d}" for n in range(41)] + ["a", "zz"]
    for _ in range(40):
        db = CowDB(base)
        for _ in range(rng.randint(1, 5)):
            key, op = rng.choice(keys), rng.random()
            if op < 0.3 and db.items.get(key) is not None:
                db.items[key].price = rng.choice([1, 2.5, True, None, "x"])
            elif op < 0.45 and key in db.items:
                del db.items[key]
            elif op < 0.55:
                db.empty[key] = Item(name=key)
            elif op < 0.7:
                db.ledger.rows[key] = {"k": rng.random()}
            elif op < 0.8:
                db.note = rng.choice([None, "it's", 'say "hi"'])
            else:
                db.items[key] = Item(name=key, tags=["é"])
            assert db.canonical_hash() == _tuple_text_hash(db)
    for rows in ({"only": {"a": 1}}, {"a": {}, "b": {}}):
        state = CowDB(BaseState(OneTable(rows=rows), DATA_HASH))
        for key in list(state.rows):
            del state.rows[key]
            assert state.canonical_hash() == _tuple_text_hash(state)
        state.rows["new"] = {"n": None}
        assert state.canonical_hash() == _tuple_text_hash(state)
