"""Where two database snapshots differ, record by record and field by field.

The grader decides DB matches by hash; when a simulation fails that check, the diagnosis needs
the evidence: which records of which tables hold what, against what the gold state holds. A
table is either keyed (a JSON object of records, or a list of records that share a unique id
field such as `bill_id`) or a single record (e.g. telecom's `device`); fields are compared down
to the leaves, with list items paired by position when both lists have the same length.

Two episodes of one domain start from the same base, so they can differ only where either
differs from it: `diff_changes` gives the rows of `diff_states` from the two episodes'
`changed_records()` (a few records) instead of two whole snapshots (the whole database), or says
it cannot be sure of giving the same rows, and the caller compares snapshots.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from tau_mcp.servers.engine.cow import BaseState

#: Rows kept per diagnosis; the count of the rest is reported beside them.
MAX_ROWS = 40
_ABSENT = object()


def _plain(value: Any) -> Any:
    return None if value is _ABSENT else value


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _fields(got: Any, expected: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    """(field path, got, expected) for every leaf that differs."""
    if got is expected or got == expected:
        return
    if isinstance(got, dict) and isinstance(expected, dict):
        for key in list(expected) + [k for k in got if k not in expected]:
            _fields(got.get(key, _ABSENT), expected.get(key, _ABSENT), _join(path, key), out)
        return
    if isinstance(got, list) and isinstance(expected, list) and len(got) == len(expected):
        for index, (a, b) in enumerate(zip(got, expected, strict=True)):
            _fields(a, b, _join(path, index), out)
        return
    out.append((path or None, _plain(got), _plain(expected)))


def _id_field(*tables: list[Any]) -> str | None:
    """The field that names each record of these lists: `id` or the first `*_id` field of the
    first record that every record has, with values unique within each list."""
    records = [r for table in tables for r in table]
    if not records or not all(isinstance(r, dict) for r in records):
        return None
    first = records[0]
    candidates = [k for k in first if k == "id" or k.endswith("_id")]
    for key in candidates:
        if all(isinstance(r.get(key), str | int) for r in records) and all(
            len({r[key] for r in table}) == len(table) for table in tables
        ):
            return key
    return None


def _keyed(table: Any) -> dict[str, Any] | None:
    """A table as {record id: record}, or None when it is a single record."""
    if isinstance(table, dict) and table and all(isinstance(v, dict) for v in table.values()):
        # A record whose every field is itself an object would look keyed too; records of a
        # keyed table name their own id, which tells them apart.
        values = list(table.values())
        if _id_field(values) is not None or all(
            any(isinstance(v, str) and v == key for v in record.values())
            for key, record in table.items()
        ):
            return {str(k): v for k, v in table.items()}
    return None


def _as_table(got: Any, expected: Any) -> tuple[dict, dict] | None:
    if isinstance(got, list) and isinstance(expected, list):
        key = _id_field(got, expected)
        if key is None:
            return None
        return {str(r[key]): r for r in got}, {str(r[key]): r for r in expected}
    a, b = _keyed(got), _keyed(expected)
    if a is not None and b is not None:
        return a, b
    if a is not None and expected in ({}, None):
        return a, {}
    if b is not None and got in ({}, None):
        return {}, b
    return None


def diff_databases(got: dict[str, Any] | None, expected: dict[str, Any] | None, db: str) -> list:
    """Every difference between one database's final and gold snapshots, as rows
    {db, table, id, field, got, expected}; a record present on one side only is one row with
    field None and the whole record on its side."""
    got, expected = got or {}, expected or {}
    rows: list[dict[str, Any]] = []
    for table in list(expected) + [t for t in got if t not in expected]:
        a, b = got.get(table, _ABSENT), expected.get(table, _ABSENT)
        if a is b or a == b:
            continue
        paired = _as_table(_plain(a), _plain(b))
        if paired is None:
            found: list[tuple[str, Any, Any]] = []
            _fields(a, b, "", found)
            rows += [_row(db, table, None, f, x, y) for f, x, y in found]
            continue
        mine, gold = paired
        for record_id in list(gold) + [r for r in mine if r not in gold]:
            x, y = mine.get(record_id, _ABSENT), gold.get(record_id, _ABSENT)
            if x is _ABSENT or y is _ABSENT:
                rows.append(_row(db, table, record_id, None, _plain(x), _plain(y)))
                continue
            found = []
            _fields(x, y, "", found)
            rows += [_row(db, table, record_id, f, v, w) for f, v, w in found]
    return rows


def _row(db: str, table: str, record_id: str | None, field: str | None, got: Any, expected: Any):
    return {
        "db": db,
        "table": table,
        "id": record_id,
        "field": field,
        "got": got,
        "expected": expected,
    }


DATABASES = ("agent_db", "user_db")


def limited(rows: list[dict[str, Any]], limit: int = MAX_ROWS) -> tuple[list[dict[str, Any]], int]:
    """At most `limit` rows, and how many more there were."""
    return rows[:limit], max(0, len(rows) - limit)


def diff_states(
    final: dict[str, Any], gold: dict[str, Any], limit: int = MAX_ROWS
) -> tuple[list[dict[str, Any]], int]:
    """The rows where the final state differs from the gold one over both databases (agent's
    first, then the user's), at most `limit`, and how many more there were."""
    rows = []
    for db in DATABASES:
        rows += diff_databases(final.get(db), gold.get(db), db)
    return limited(rows, limit)


# --- from two episodes' changes ----------------------------------------------------------------
def diff_changes(
    final: dict[str, Any], gold: dict[str, Any], bases: dict[str, BaseState | None]
) -> list[dict[str, Any]] | None:
    """Every row `diff_states` gives for two episodes' snapshots, in its order, from their
    `Episode.changed_records()` over the same `bases` (per database); None when this cannot be
    sure of the same rows (a table replaced as a whole, a table whose records do not all name
    their keys, a database on one side only): then compare the snapshots."""
    rows: list[dict[str, Any]] = []
    for db in DATABASES:
        mine, theirs, base = final.get(db), gold.get(db), bases.get(db)
        if mine is None and theirs is None:
            continue
        if mine is None or theirs is None or base is None:
            return None
        found = _diff_changed_db(mine, theirs, base, db)
        if found is None:
            return None
        rows += found
    return rows


def _diff_changed_db(
    mine: dict[str, Any], theirs: dict[str, Any], base: BaseState, db: str
) -> list[dict[str, Any]] | None:
    my_tables, gold_tables = mine.get("tables") or {}, theirs.get("tables") or {}
    my_fields, gold_fields = mine.get("fields") or {}, theirs.get("fields") or {}
    rows: list[dict[str, Any]] = []
    for name in base.fields:  # the snapshot's order
        if name in my_fields or name in gold_fields:
            if name in base.dict_fields or name in base.nested_tables:
                return None  # a table replaced as a whole
            a = my_fields[name] if name in my_fields else base.field_json(name)
            b = gold_fields[name] if name in gold_fields else base.field_json(name)
            rows += diff_databases({name: a}, {name: b}, db)
        elif name in my_tables or name in gold_tables:
            found = _diff_records(
                name, my_tables.get(name) or {}, gold_tables.get(name) or {}, base, db
            )
            if found is None:
                return None
            rows += found
    return rows


@dataclass(frozen=True, slots=True)
class _BaseTable:
    """What diffing changed records needs of one table of a base, worked out once."""

    records: dict  # the base's records by key
    position: dict[str, int]  # each key's place in the base's (and so the snapshot's) order
    unnamed: frozenset  # keys whose record does not name its key (see `_names_key`)
    plain_nested: bool  # a nested table with a field that is no JSON object (never "keyed")

    def record(self, view: dict[str, Any], key: str) -> Any:
        """A record on the side of `view`: its change, else the base's, else _ABSENT."""
        if key in view:
            value = view[key]
            return _ABSENT if value is None else value
        if key in self.position:
            return to_jsonable_python(self.records[key])
        return _ABSENT

    def keyed_with(self, view: dict[str, Any]) -> bool:
        """Whether the table with these changes reads as keyed in `_keyed` because every
        record names its key (the rule that holds record by record)."""
        return all(key in view for key in self.unnamed) and all(
            value is None or _names_key(key, value) for key, value in view.items()
        )


_TABLES: weakref.WeakKeyDictionary[BaseState, dict[str, _BaseTable | None]] = (
    weakref.WeakKeyDictionary()
)


def _names_key(key: Any, record: Any) -> bool:
    return isinstance(record, dict) and any(
        isinstance(v, str) and v == key for v in record.values()
    )


def _names_key_unserialized(key: Any, record: Any) -> bool:
    """`_names_key` of a base record without dumping it (a tenth of the cost): a model's string
    fields dump to themselves. A record named only in a value that becomes a string when
    dumped (an enum, a date) reads as unnamed, which only sends the diff to the snapshots."""
    if isinstance(record, BaseModel):
        return _names_key(key, record.__dict__)
    return _names_key(key, record)


def _base_table(base: BaseState, name: str) -> _BaseTable | None:
    tables = _TABLES.get(base)
    if tables is None:
        tables = _TABLES[base] = {}
    if name not in tables:
        tables[name] = _build_base_table(base, name)
    return tables[name]


def _build_base_table(base: BaseState, name: str) -> _BaseTable | None:
    if name not in base.dict_fields and name not in base.nested_tables:
        return None
    records = base.records(name)
    if not all(isinstance(key, str) for key in records):
        return None
    position = {key: i for i, key in enumerate(records)}
    inner = base.nested_tables.get(name)
    if inner is None:
        unnamed = frozenset(
            key for key, record in records.items() if not _names_key_unserialized(key, record)
        )
        return _BaseTable(records, position, unnamed, False)
    value = getattr(base.model, name)
    plain = any(
        not isinstance(to_jsonable_python(getattr(value, field)), dict)
        for field in type(value).model_fields
        if field != inner
    )
    return _BaseTable(records, position, frozenset(), plain)


def _diff_records(
    name: str, mine: dict[str, Any], theirs: dict[str, Any], base: BaseState, db: str
) -> list[dict[str, Any]] | None:
    """The rows of one table whose records changed on either side (only those can differ)."""
    table = _base_table(base, name)
    if table is None:
        return None
    inner = base.nested_tables.get(name)
    if inner is None:
        if not (table.keyed_with(mine) and table.keyed_with(theirs)):
            return None
    elif not table.plain_nested:
        return None
    pairs = {key: (table.record(mine, key), table.record(theirs, key)) for key in {*mine, *theirs}}
    rows: list[dict[str, Any]] = []
    for key in _record_order(table, pairs, mine, theirs):
        x, y = pairs[key]
        if inner is not None:  # the snapshot's `{records: {...}, ...}` read field by field
            found: list[tuple[str, Any, Any]] = []
            _fields(x, y, _join(inner, key), found)
            rows += [_row(db, name, None, f, v, w) for f, v, w in found]
        elif x is _ABSENT or y is _ABSENT:
            rows.append(_row(db, name, key, None, _plain(x), _plain(y)))
        else:
            found = []
            _fields(x, y, "", found)
            rows += [_row(db, name, key, f, v, w) for f, v, w in found]
    return rows


def _record_order(
    table: _BaseTable, pairs: dict[str, tuple[Any, Any]], mine: dict, theirs: dict
) -> list[str]:
    """The changed keys in the order the snapshot diff meets them: the gold table's records
    (base keys in the base's order, then new ones in the order the episode added them), then
    those only the final table has."""

    def order(view: dict[str, Any], side: int) -> list[str]:
        present = [key for key, pair in pairs.items() if pair[side] is not _ABSENT]
        added = {key: i for i, key in enumerate(view)}
        known = table.position
        return sorted(present, key=lambda k: (0, known[k]) if k in known else (1, added.get(k, 0)))

    gold = order(theirs, 1)
    in_gold = set(gold)
    return gold + [key for key in order(mine, 0) if key not in in_gold]
