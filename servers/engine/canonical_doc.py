"""The canonical text of a loaded database, kept with the position of every part in it.

An episode changes a handful of records out of thousands, so its canonical text is the base
text with a few parts replaced, inserted or removed. Knowing where each part sits, we hash that
text as slices of the base plus the new parts, with no per-record work for untouched records and
without building the text itself.

Layout (see canonical.py): `{"field":value,...}`, fields sorted, null fields left out; a dict
field's value is `{"key":record,...}`, keys sorted, null records left out. A nested table (see
cow.py) is a model's canonical object with its records, laid out like a dict field's, in place
of its records field. The text is ASCII (the JSON encoder escapes everything else), so character
offsets are byte offsets.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from pydantic import BaseModel

from tau_mcp.servers.engine.canonical import canonical_fragment, key_json

# The running sha256 state of the base text is saved every this many bytes; an edited text is
# hashed from the last saved state before its first change instead of from the start.
CHECKPOINT_BYTES = 32 * 1024

# Kinds of change to one field; see `Change`.
RECORDS = "records"
VALUE = "value"

# (field, RECORDS, ((key, fragment or None), ...) sorted by key): records of a dict field that
#   differ from the base, None meaning the record is absent (deleted, or dumps to null);
# (field, VALUE, fragment or None): a field whose whole value differs from the base.
# Fragments are canonical JSON bytes. A tuple of changes, in field order, is hashable: it
# keys the memo of hashes.
Change = tuple[str, str, Any]


def fragment_bytes(value: Any) -> bytes | None:
    """A value's canonical JSON as ASCII bytes, or None where it dumps to null."""
    text = canonical_fragment(value)
    return None if text is None else text.encode("ascii")


@dataclass(frozen=True, slots=True)
class FieldSpan:
    start: int  # where `"name":` starts
    value_start: int
    end: int


@dataclass(frozen=True, slots=True)
class TableSpans:
    """Where each record of a table sits; a record that dumps to null has no entry."""

    keys: list  # sorted
    index: dict  # key -> position in `keys`
    starts: list[int]  # where `"key":` starts
    value_starts: list[int]
    ends: list[int]
    open: int  # where the `{` of the records object is
    close: int  # just past its `}`


class CanonicalDoc:
    """The base text, its parts' positions, its hash, and hashing of edited versions of it."""

    def __init__(
        self,
        text: bytes,
        fields: dict[str, FieldSpan],
        tables: dict[str, TableSpans],
        order: tuple[tuple[str, FieldSpan | None], ...],
    ) -> None:
        self.text = text
        self.fields = fields  # the fields present in the text
        self.tables = tables
        self.order = order  # every field, sorted, with its span (None: left out as null)
        self._view = memoryview(text)
        self._step = step = CHECKPOINT_BYTES
        running = hashlib.sha256()
        self._checkpoints = []
        for offset in range(0, len(text) + 1, step):
            self._checkpoints.append(running.copy())
            running.update(self._view[offset : offset + step])
        self.base_hash = running.hexdigest()

    # --- comparing an episode's values with the base ---------------------------------------
    def same_value(self, name: str, fragment: bytes | None) -> bool:
        span = self.fields.get(name)
        if span is None or fragment is None:
            return span is None and fragment is None
        return span.end - span.value_start == len(fragment) and self.text.startswith(
            fragment, span.value_start
        )

    def record_changes(self, name: str, owned: dict, gone: set) -> tuple:
        """((key, fragment or None), ...) for the records of `name` that differ from the base:
        `owned` are an episode's own records (read or written), `gone` its deleted base keys."""
        table = self.tables[name]
        index, value_starts, ends, text = table.index, table.value_starts, table.ends, self.text
        changes = []
        for key, value in owned.items():
            fragment = fragment_bytes(value)
            i = index.get(key)
            if i is None:
                if fragment is not None:
                    changes.append((key, fragment))
            elif (
                fragment is None
                or ends[i] - value_starts[i] != len(fragment)
                or not text.startswith(fragment, value_starts[i])
            ):
                changes.append((key, fragment))
        changes.extend((key, None) for key in gone if key in index)
        if len(changes) > 1:
            changes.sort(key=itemgetter(0))
        return tuple(changes)

    # --- hashing ----------------------------------------------------------------------------
    def digest(self, changes: tuple[Change, ...]) -> str:
        """sha256 hex of the base text with `changes` applied."""
        pieces = self._pieces(changes)
        text = self.text
        position, first_new = 0, len(pieces)
        for i, (offset, piece) in enumerate(pieces):
            if offset == position or (offset < 0 and text.startswith(piece, position)):
                position += len(piece)
            else:
                first_new = i
                break
        checkpoint = position // self._step
        running = self._checkpoints[checkpoint].copy()
        running.update(self._view[checkpoint * self._step : position])
        for _, piece in pieces[first_new:]:
            running.update(piece)
        return running.hexdigest()

    def _pieces(self, changes: tuple[Change, ...]) -> list[tuple[int, Any]]:
        """The edited text as (base offset, slice of the base) and (-1, new bytes) pieces."""
        view = self._view
        by_field = {change[0]: change for change in changes}
        pieces: list[tuple[int, Any]] = [(-1, b"{")]
        for name, span in self.order:
            change = by_field.get(name)
            if change is None:
                if span is not None:
                    _comma(pieces)
                    pieces.append((span.start, view[span.start : span.end]))
            elif change[1] == VALUE:
                if change[2] is not None:
                    _comma(pieces)
                    pieces.append((-1, _head(name) + change[2]))
            else:
                assert span is not None  # a table field is never null
                table = self.tables[name]
                _comma(pieces)
                pieces.append((span.start, view[span.start : table.open]))
                pieces.append((-1, b"{"))
                self._table_pieces(name, change[2], pieces)
                pieces.append((-1, b"}"))
                if table.close < span.end:  # the rest of a nested table's object
                    pieces.append((table.close, view[table.close : span.end]))
        pieces.append((-1, b"}"))
        return pieces

    def _table_pieces(self, name: str, records: tuple, pieces: list[tuple[int, Any]]) -> None:
        """A dict field's records, joined by commas: runs of untouched base records as one
        slice each, changed and new records as their own parts, absent ones left out."""
        table = self.tables[name]
        keys, index, starts, ends = table.keys, table.index, table.starts, table.ends
        view = self._view
        parts: list[tuple[int, Any]] = []
        cursor = 0  # the first base record not yet emitted or skipped
        for key, fragment in records:
            at = index.get(key)
            position = at if at is not None else bisect_left(keys, key, lo=cursor)
            if cursor < position:
                start, end = starts[cursor], ends[position - 1]
                parts.append((start, view[start:end]))
            if fragment is not None:
                parts.append((-1, _head(key) + fragment))
            cursor = position + 1 if at is not None else position
        if cursor < len(keys):
            start, end = starts[cursor], ends[-1]
            parts.append((start, view[start:end]))
        for i, part in enumerate(parts):
            if i:
                pieces.append((-1, b","))
            pieces.append(part)


def _head(key: Any) -> bytes:
    return (key_json(key) + ":").encode("ascii")


def _comma(pieces: list[tuple[int, Any]]) -> None:
    """A comma before this part unless it is the first one after the opening brace."""
    if len(pieces) > 1:
        pieces.append((-1, b","))


class _TextBuilder:
    """Collects ASCII chunks and knows the offset at which the next one starts."""

    __slots__ = ("chunks", "position")

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.position = 0

    def add(self, chunk: str) -> int:
        """Append `chunk`; returns its offset."""
        start = self.position
        self.chunks.append(chunk)
        self.position = start + len(chunk)
        return start

    def text(self) -> bytes:
        text = "".join(self.chunks)
        if not text.isascii():  # offsets would count characters, not bytes
            raise ValueError("canonical text is not ASCII")
        return text.encode("ascii")


def build_doc(
    model: BaseModel, dict_fields: set[str], nested_tables: dict[str, str] | None = None
) -> CanonicalDoc:
    """The canonical text of `model` with every part's position. `nested_tables`: field ->
    the records field of its value (see cow.py)."""
    nested_tables = nested_tables or {}
    out = _TextBuilder()
    out.add("{")
    fields: dict[str, FieldSpan] = {}
    tables: dict[str, TableSpans] = {}
    order: list[tuple[str, FieldSpan | None]] = []
    for name in sorted(type(model).model_fields):
        value = getattr(model, name)
        is_table = name in dict_fields or name in nested_tables
        fragment = None if is_table else canonical_fragment(value)
        if not is_table and fragment is None:
            order.append((name, None))
            continue
        if fields:
            out.add(",")
        start = out.add(key_json(name) + ":")
        value_start = out.position
        if name in dict_fields:
            tables[name] = _add_table(value, out)
        elif name in nested_tables:
            tables[name] = _add_nested(value, nested_tables[name], out)
        else:
            out.add(fragment)  # type: ignore[arg-type]
        fields[name] = span = FieldSpan(start, value_start, out.position)
        order.append((name, span))
    out.add("}")
    return CanonicalDoc(out.text(), fields, tables, tuple(order))


def _add_nested(value: BaseModel, records_field: str, out: _TextBuilder) -> TableSpans:
    """A nested table's canonical object: its fields sorted, null ones left out, the records
    field laid out as a table."""
    out.add("{")
    table: TableSpans | None = None
    first = True
    for name in sorted(type(value).model_fields):
        part = getattr(value, name)
        fragment = None if name == records_field else canonical_fragment(part)
        if name != records_field and fragment is None:
            continue
        if not first:
            out.add(",")
        first = False
        out.add(key_json(name) + ":")
        if name == records_field:
            table = _add_table(part, out)
        else:
            out.add(fragment)  # type: ignore[arg-type]
    out.add("}")
    assert table is not None
    return table


def _add_table(table: dict, out: _TextBuilder) -> TableSpans:
    keys: list = []
    starts: list[int] = []
    value_starts: list[int] = []
    ends: list[int] = []
    add = out.add
    opened = add("{")
    for key in sorted(table):
        fragment = canonical_fragment(table[key])
        if fragment is None:
            continue
        if keys:
            add(",")
        starts.append(add(key_json(key) + ":"))
        value_starts.append(add(fragment))
        ends.append(out.position)
        keys.append(key)
    add("}")
    index = {key: i for i, key in enumerate(keys)}
    return TableSpans(keys, index, starts, value_starts, ends, opened, out.position)
