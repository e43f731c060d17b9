"""Where two database snapshots differ, record by record and field by field.

The grader decides DB matches by hash; when a simulation fails that check, the diagnosis needs
the evidence: which records of which tables hold what, against what the gold state holds. A
table is either keyed (a JSON object of records, or a list of records that share a unique id
field such as `bill_id`) or a single record (e.g. telecom's `device`); fields are compared down
to the leaves, with list items paired by position when both lists have the same length.
"""

from __future__ import annotations

from typing import Any

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


def diff_states(
    final: dict[str, Any], gold: dict[str, Any], limit: int = MAX_ROWS
) -> tuple[list[dict[str, Any]], int]:
    """The rows where the final state differs from the gold one over both databases (agent's
    first, then the user's), at most `limit`, and how many more there were."""
    rows = []
    for db in ("agent_db", "user_db"):
        rows += diff_databases(final.get(db), gold.get(db), db)
    return rows[:limit], max(0, len(rows) - limit)
