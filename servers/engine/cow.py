"""Copy-on-write database state.

A domain's database is loaded once into a pydantic model and shared, read-only, by every episode.
An episode sees it through a `CowDB`: top-level fields are copied only when the episode touches
them, and dict-valued tables (the large ones: flights, users, orders...) only record by record.
Rules for tool code:
- `db.table[key]`, `db.table.get(key)` return the episode's own, writable copy of the record.
- `db.table.values()` / `.items()` yield records without copying: read them, never mutate them;
  index the table by key to get a copy you may change.

A table may also sit one level down, in a field whose value is a model holding the records in
one dict field plus a few plain fields (the banking domain's `{data, notes}` tables). Its model
class names that dict field in the class variable `cow_records` (see `records_field`); the
episode then gets a shallow copy of the model whose dict field is a CowDict, and the same rules
apply to `db.field.<records>`.
"""

from __future__ import annotations

import copy
import pickle
import threading
import typing
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic_core import to_jsonable_python

from tau_mcp.servers.engine.canonical_doc import (
    CANONICAL_JSON,
    RECORDS,
    VALUE,
    CanonicalDoc,
    Change,
    TextFormat,
    build_doc,
)
from tau_mcp.servers.engine.lru import LruCache

# Distinct episode states whose hash is remembered per base (the gold state and the runs that
# reach it, trials of one task...), and the largest total of changed fragments worth keeping.
HASH_MEMO_ENTRIES = 256
HASH_MEMO_MAX_BYTES = 64 * 1024
# The most text of base records' tool results kept (`BaseState.record_text`); past it, a record
# not yet kept is rendered on every read (airline's whole database is ~3 MB of such text).
RECORD_TEXTS_MAX_CHARS = 32 << 20

_MISSING = object()
# How an episode's value of a nested table compares with the base (see `CowDB._nested_state`).
_UNTOUCHED, _RECORDS, _REPLACED = "untouched", "records", "replaced"


def records_field(value: Any) -> str | None:
    """The dict field holding a nested table's records, when `value` is such a table: a model
    whose class names that field in `cow_records`."""
    if not isinstance(value, BaseModel):
        return None
    name = getattr(type(value), "cow_records", None)
    if isinstance(name, str) and isinstance(getattr(value, name, None), dict):
        return name
    return None


def _copy_record(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_copy(deep=True)
    return copy.deepcopy(value)


class CowDict(MutableMapping):
    """A dict view over a shared base dict; records are copied into the episode on access."""

    __slots__ = ("_base", "_own", "_gone")

    def __init__(self, base: dict) -> None:
        self._base = base
        self._own: dict = {}
        self._gone: set = set()

    def __getitem__(self, key: Any) -> Any:
        own = self._own
        if key in own:
            return own[key]
        if key in self._gone:
            raise KeyError(key)
        value = _copy_record(self._base[key])
        own[key] = value
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self._own[key] = value
        self._gone.discard(key)

    def __delitem__(self, key: Any) -> None:
        if key not in self:
            raise KeyError(key)
        self._own.pop(key, None)
        if key in self._base:
            self._gone.add(key)

    def __contains__(self, key: Any) -> bool:
        if key in self._own:
            return True
        return key in self._base and key not in self._gone

    def __iter__(self) -> Iterator:
        gone, own, base = self._gone, self._own, self._base
        for key in base:
            if key not in gone:
                yield key
        for key in own:
            if key not in base:
                yield key

    def __len__(self) -> int:
        base = self._base
        return len(base) - len(self._gone) + sum(1 for k in self._own if k not in base)

    def peek(self, key: Any) -> Any:
        """The current record without copying it: read-only use only."""
        own = self._own
        if key in own:
            return own[key]
        if key in self._gone:
            raise KeyError(key)
        return self._base[key]

    def owns(self, key: Any) -> bool:
        """Whether the episode holds its own copy of this record (taken, written or new)."""
        return key in self._own

    def values(self):  # type: ignore[override]
        return [record for _, record in self.items()]

    def items(self):  # type: ignore[override]
        own, gone, base = self._own, self._gone, self._base
        if not own and not gone:
            return list(base.items())
        pairs = [(k, own[k] if k in own else v) for k, v in base.items() if k not in gone]
        pairs.extend((k, v) for k, v in own.items() if k not in base)
        return pairs

    @property
    def touched(self) -> bool:
        return bool(self._own or self._gone)

    def owned_keys(self) -> set:
        return set(self._own) | self._gone

    def __repr__(self) -> str:
        return f"CowDict({len(self)} records, {len(self._own)} owned)"

    # Pickling (task starts are cached pickled, see starts.py): the base goes by reference.
    def __reduce__(self) -> Any:
        return (CowDict, (self._base,), (self._own, self._gone))

    def __setstate__(self, state: tuple[dict, set]) -> None:
        self._own, self._gone = state


class BaseState:
    """A loaded database plus what is derived from it once: its JSON dump (for snapshots), its
    canonical text with every part's position (for hashing) and a memo of episode hashes.

    All of it describes the shared, never-mutated base model, and is filled lazily. The text
    hashed is canonical JSON unless the domain names another format (`DomainSpec.hash_format`).
    """

    def __init__(self, model: BaseModel, text_format: TextFormat = CANONICAL_JSON) -> None:
        self.model = model
        self.text_format = text_format
        self.model_cls = type(model)
        self.fields = list(self.model_cls.model_fields)
        self.dict_fields = {f for f in self.fields if isinstance(getattr(model, f), dict)}
        # Nested tables: field -> the dict field of its value that holds the records.
        self.nested_tables = {
            f: inner for f in self.fields if (inner := records_field(getattr(model, f))) is not None
        }
        self._json: dict[str, Any] = {}
        self._pickled: dict[str, bytes | None] = {}
        self._adapters: dict[str, TypeAdapter] = {}
        self._doc: CanonicalDoc | None = None
        self._doc_lock = threading.Lock()
        self._hash_memo: LruCache[tuple[Change, ...], str] = LruCache(HASH_MEMO_ENTRIES)
        self._record_ids: frozenset[int] | None = None
        self._texts: dict[int, str] = {}
        self._texts_chars = 0

    def __reduce__(self) -> Any:
        # Episode copies refer to the base; they must never carry a copy of it.
        raise TypeError("a BaseState is shared by reference and is never copied or pickled")

    # --- JSON dumps -------------------------------------------------------------------------
    def field_json(self, name: str) -> Any:
        if name not in self._json:
            value = getattr(self.model, name)
            if name in self.dict_fields:
                self._json[name] = {k: to_jsonable_python(v) for k, v in value.items()}
            else:
                self._json[name] = to_jsonable_python(value)
        return self._json[name]

    def records(self, name: str) -> dict:
        """The base dict of records of a table field, top-level or nested."""
        value = getattr(self.model, name)
        inner = self.nested_tables.get(name)
        return value if inner is None else getattr(value, inner)

    # --- tool results ----------------------------------------------------------------------
    def record_text(self, value: Any, render: Callable[[Any], str]) -> str | None:
        """`render(value)` when `value` is one of this base's own records (which a read tool
        returns uncopied, see `CowDict.peek`), made once: a base record is never mutated, so
        its text never changes. None for any other value. (An id identifies a record for as
        long as this state lives: it holds every record.)"""
        ids = self._record_ids
        if ids is None:
            ids = self._record_ids = frozenset(
                id(record)
                for name in (*self.dict_fields, *self.nested_tables)
                for record in self.records(name).values()
            )
        key = id(value)
        if key not in ids:
            return None
        text = self._texts.get(key)
        if text is None:
            text = render(value)
            if self._texts_chars + len(text) <= RECORD_TEXTS_MAX_CHARS:
                self._texts[key] = text
                self._texts_chars += len(text)
        return text

    # --- copies ----------------------------------------------------------------------------
    def field_copy(self, name: str) -> Any:
        """A private deep copy of a field's value, unpickled from a pickle of it made once:
        three to five times cheaper than `copy.deepcopy` for pydantic models."""
        if name not in self._pickled:
            try:
                self._pickled[name] = pickle.dumps(
                    getattr(self.model, name), protocol=pickle.HIGHEST_PROTOCOL
                )
            except Exception:  # noqa: BLE001 - not picklable: copy it the slow way
                self._pickled[name] = None
        pickled = self._pickled[name]
        if pickled is None:
            return copy.deepcopy(getattr(self.model, name))
        return pickle.loads(pickled)

    # --- canonical text and hashes ----------------------------------------------------------
    @property
    def canonical(self) -> CanonicalDoc:
        doc = self._doc
        if doc is None:
            with self._doc_lock:
                if self._doc is None:
                    self._doc = build_doc(
                        self.model, self.dict_fields, self.nested_tables, self.text_format
                    )
                doc = self._doc
        return doc

    def hash_of(self, changes: tuple[Change, ...]) -> str:
        """The canonical hash of the base with `changes` applied (see CowDB.changes)."""
        if not changes:
            return self.canonical.base_hash
        digest = self._hash_memo.get(changes)
        if digest is None:
            digest = self.canonical.digest(changes)
            if _payload_size(changes) <= HASH_MEMO_MAX_BYTES:
                self._hash_memo.put(changes, digest)
        return digest

    def clear_hash_memo(self) -> None:
        self._hash_memo.clear()

    def warm(self) -> None:
        """Build the canonical text now (servers do this at start so the first grade is fast)."""
        _ = self.canonical

    def shared_parts(self) -> dict[str, Any]:
        """Objects an episode refers to without owning them: this state, its model and the
        model's dict fields (the bases of CowDicts). Episode copies keep referring to them."""
        parts: dict[str, Any] = {"state": self, "model": self.model}
        for name in (*self.dict_fields, *self.nested_tables):
            parts[f"table:{name}"] = self.records(name)
        return parts

    # --- validation of updates --------------------------------------------------------------
    def adapter(self, name: str, record: bool) -> TypeAdapter:
        """Validates a whole field's value, or (`record`) one record of a table field."""
        key = f"{name}:{record}"
        if key not in self._adapters:
            annotation = self.model_cls.model_fields[name].annotation
            if record:
                inner = self.nested_tables.get(name)
                if inner is not None:
                    table_cls = type(getattr(self.model, name))
                    annotation = table_cls.model_fields[inner].annotation
                annotation = _dict_value_type(annotation)
            self._adapters[key] = TypeAdapter(annotation)
        return self._adapters[key]


def _payload_size(changes: tuple[Change, ...]) -> int:
    size = 0
    for _, kind, payload in changes:
        if kind == RECORDS:
            size += sum(len(fragment or b"") for _, fragment in payload)
        else:
            size += len(payload or b"")
    return size


def _dict_value_type(annotation: Any) -> Any:
    for candidate in (annotation, *typing.get_args(annotation)):
        origin = typing.get_origin(candidate)
        if origin in (dict, typing.Dict):  # noqa: UP006
            return typing.get_args(candidate)[1]
    return Any


def deep_merge(current: Any, update: Any) -> Any:
    """Merge `update` into `current` the way the reference's initialization data does:
    nested dicts merge key by key, anything else replaces."""
    if isinstance(current, dict) and isinstance(update, dict):
        merged = dict(current)
        for key, value in update.items():
            merged[key] = deep_merge(current.get(key), value) if key in current else value
        return merged
    return update


class CowDB:
    """One episode's view of a database: attribute access like the pydantic model it wraps."""

    def __init__(self, base: BaseState) -> None:
        object.__setattr__(self, "_base", base)

    def __getattr__(self, name: str) -> Any:
        base: BaseState = object.__getattribute__(self, "_base")
        if name not in base.model_cls.model_fields:
            raise AttributeError(f"'{base.model_cls.__name__}' object has no attribute '{name}'")
        value = getattr(base.model, name)
        inner = base.nested_tables.get(name)
        if name in base.dict_fields:
            view = CowDict(value)
        elif inner is not None:
            view = value.model_copy(update={inner: CowDict(getattr(value, inner))})
        else:
            view = base.field_copy(name)
        object.__setattr__(self, name, view)
        return view

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    @property
    def base(self) -> BaseState:
        return object.__getattribute__(self, "_base")

    # Pickling (task starts are cached pickled, see starts.py): the base goes by reference.
    def __reduce__(self) -> Any:
        own = {name: value for name, value in self.__dict__.items() if name != "_base"}
        return (CowDB, (self.base,), own)

    def __setstate__(self, own: dict[str, Any]) -> None:
        self.__dict__.update(own)

    def _touched(self, name: str) -> Any:
        """The episode's own value of a field, or _MISSING if it never touched it."""
        own = self.__dict__.get(name, _MISSING)
        if isinstance(own, CowDict) and not own.touched:
            return _MISSING
        if own is not _MISSING and name in self.base.nested_tables:
            if self._nested_state(name, own) == _UNTOUCHED:
                return _MISSING
        return own

    def _nested_state(self, name: str, own: Any) -> str:
        """Whether an episode's value of a nested table is the base's (_UNTOUCHED), differs
        only in records (_RECORDS: its records are still a view over the base's), or was
        replaced in any other way (_REPLACED)."""
        base = self.base
        inner = base.nested_tables[name]
        base_value = getattr(base.model, name)
        if type(own) is not type(base_value):
            return _REPLACED
        records = getattr(own, inner)
        if not isinstance(records, CowDict) or records._base is not getattr(base_value, inner):
            return _REPLACED
        for field_name in type(own).model_fields:
            if field_name == inner:
                continue
            mine, theirs = getattr(own, field_name), getattr(base_value, field_name)
            # Equal, not only the same object: a cached task start comes back unpickled, with
            # copies of these fields (the table's notes text).
            if mine is not theirs and mine != theirs:
                return _REPLACED
        return _RECORDS if records.touched else _UNTOUCHED

    # --- snapshots --------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The database in the reference JSON layout. Untouched parts share the cached dump,
        so callers must treat the result as read-only (serialize it, don't mutate it)."""
        base = self.base
        out: dict[str, Any] = {}
        for name in base.fields:
            own = self._touched(name)
            if own is _MISSING:
                out[name] = base.field_json(name)
            elif isinstance(own, CowDict):
                out[name] = _records_json(own, base.field_json(name))
            elif name in base.nested_tables:
                inner = base.nested_tables[name]
                if self._nested_state(name, own) == _RECORDS:
                    cached = base.field_json(name)
                    table = dict(cached)
                    table[inner] = _records_json(getattr(own, inner), cached[inner])
                    out[name] = table
                else:
                    out[name] = _plain_json(own)
            else:
                out[name] = to_jsonable_python(own)
        return out

    def changes(self) -> tuple[Change, ...]:
        """How this state's canonical text differs from the base's, field by field (reads
        that copied a record without changing it are no difference)."""
        return tuple(change for change, _ in self._differences())

    def _differences(self) -> Iterator[tuple[Change, Any]]:
        """Each change (see `changes`) with the episode's value it comes from: the table's
        CowDict for record changes, the field's value otherwise."""
        base = self.base
        doc = base.canonical
        mine = self.__dict__
        for name, _ in doc.order:
            own = mine.get(name, _MISSING)
            if own is _MISSING:
                continue
            nested = name in base.nested_tables
            if nested and self._nested_state(name, own) != _REPLACED:
                own = getattr(own, base.nested_tables[name])
            if isinstance(own, CowDict) and own._base is base.records(name):
                if own.touched:
                    records = doc.record_changes(name, own._own, own._gone)
                    if records:
                        yield (name, RECORDS, records), own
            else:
                fragment = doc.fragment(_plain_json(own) if nested else own)
                if not doc.same_value(name, fragment):
                    yield (name, VALUE, fragment), own

    def changed_records(self) -> dict[str, Any]:
        """The changes (see `changes`) as evidence, in the reference JSON layout:
        `{"tables": {table: {key: record or None}}, "fields": {field: value}}`. A table (a dict
        field, or a nested table whose records are still a view of the base's) lists its
        records whose canonical JSON differs from the base's, None for a deleted one: the
        episode's own records in the order it took them, then the deleted. Any other field
        that differs, a table replaced as a whole included, is in `fields` with its value.
        Costs what `changes` costs plus a dump of each changed record: a few records, not the
        database (which is what `snapshot` reads)."""
        tables: dict[str, dict[Any, Any]] = {}
        fields: dict[str, Any] = {}
        for (name, kind, payload), own in self._differences():
            if kind == VALUE:
                fields[name] = _plain_json(own)
                continue
            changed = {key for key, _ in payload}
            owned = own._own
            records = {k: to_jsonable_python(v) for k, v in owned.items() if k in changed}
            records.update((k, None) for k in own._gone if k in changed)
            tables[name] = records
        return {"tables": tables, "fields": fields}

    def canonical_hash(self) -> str:
        return self.base.hash_of(self.changes())

    # --- bulk updates (task initialization data) --------------------------------------------
    def apply_update(self, update: dict[str, Any]) -> None:
        """Deep-merge `update` (reference JSON layout) into this state and validate it."""
        base = self.base
        for name, value in update.items():
            if name not in base.model_cls.model_fields:
                raise ValueError(f"unknown field '{name}' for {base.model_cls.__name__}")
            inner = base.nested_tables.get(name)
            if name in base.dict_fields and isinstance(value, dict):
                self._merge_records(name, getattr(self, name), value)
            elif (
                inner is not None
                and isinstance(value, dict)
                and set(value) == {inner}
                and isinstance(value[inner], dict)
                and self._nested_state(name, getattr(self, name)) != _REPLACED
            ):
                self._merge_records(name, getattr(getattr(self, name), inner), value[inner])
            else:
                current = _plain_json(getattr(self, name))
                merged = deep_merge(current, value)
                setattr(self, name, base.adapter(name, record=False).validate_python(merged))

    def _merge_records(self, name: str, table: CowDict, update: dict[str, Any]) -> None:
        adapter = self.base.adapter(name, record=True)
        for key, rec in update.items():
            current = to_jsonable_python(table.peek(key)) if key in table else None
            merged = deep_merge(current, rec) if current is not None else rec
            table[key] = adapter.validate_python(merged)

    def retained_records(self) -> int:
        """How many records this episode owns (for memory diagnostics)."""
        total = 0
        nested = self.base.nested_tables
        for name, value in self.__dict__.items():
            if name in nested and self._nested_state(name, value) != _REPLACED:
                value = getattr(value, nested[name])
            if isinstance(value, CowDict):
                total += len(value._own)
            elif name != "_base":
                total += 1
        return total


def _records_json(view: CowDict, cached: dict[str, Any]) -> dict[str, Any]:
    """A table's records in JSON layout: the base's cached dump for records the episode does
    not own, a fresh dump for those it does."""
    owned = view._own
    return {k: (to_jsonable_python(owned[k]) if k in owned else cached[k]) for k in view}


def _plain_json(value: Any) -> Any:
    """`to_jsonable_python(value)`, also for a nested table whose records are a CowDict
    (pydantic cannot serialize a CowDict inside a model)."""
    if isinstance(value, BaseModel) and any(
        isinstance(v, CowDict) for v in value.__dict__.values()
    ):
        return {
            name: (
                {k: to_jsonable_python(v) for k, v in part.items()}
                if isinstance(part, CowDict)
                else to_jsonable_python(part)
            )
            for name, part in ((f, getattr(value, f)) for f in type(value).model_fields)
        }
    return to_jsonable_python(value)
