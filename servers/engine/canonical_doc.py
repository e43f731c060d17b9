"""The canonical text of a loaded database, kept with the position of every part in it.

An episode changes a handful of records out of thousands, so its canonical text is the base
text with a few parts replaced, inserted or removed. Knowing where each part sits, we hash that
text as slices of the base plus the new parts, with no per-record work for untouched records and
without building the text itself.

Layout (see canonical.py): `{"field":value,...}`, fields sorted, null fields left out; a dict
field's value is `{"key":record,...}`, keys sorted, null records left out. A nested table (see
cow.py) is a model's canonical object with its records, laid out like a dict field's, in place
of its records field. Positions count bytes of the encoded text.

That is the default `TextFormat`, the canonical JSON tau2's hashes are taken of. A domain whose
reference hashes another text of the same shape (fields and records sorted by key, each one
written as a keyed part) names its own format (`DomainSpec.hash_format`): the original
τ-bench hashes Python's `str()` of nested sorted tuples, `(('orders', (('#W1', (...)), ...)), ...)`.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable
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
# Fragments are the format's bytes of a value. A tuple of changes, in field order, is hashable:
# it keys the memo of hashes.
Change = tuple[str, str, Any]


def fragment_bytes(value: Any) -> bytes | None:
    """A value's canonical JSON as ASCII bytes, or None where it dumps to null."""
    text = canonical_fragment(value)
    return None if text is None else text.encode("ascii")


def _json_head(key: str) -> bytes:
    return (key_json(key) + ":").encode("ascii")


@dataclass(frozen=True)
class TextFormat:
    """How a database is written out to be hashed. Fields and table records are keyed parts,
    sorted by key: `head(key) + fragment(value) + tail`, joined by `separator` between `open`
    and `close`. `fragment` gives None for a value left out altogether (JSON's nulls)."""

    fragment: Callable[[Any], bytes | None]
    head: Callable[[str], bytes]
    tail: bytes = b""
    open: bytes = b"{"
    close: bytes = b"}"
    separator: bytes = b","
    # A sequence of exactly one part ends with a comma before `close` (Python's `(x,)`).
    singleton_comma: bool = False


CANONICAL_JSON = TextFormat(fragment=fragment_bytes, head=_json_head)


@dataclass(frozen=True, slots=True)
class FieldSpan:
    start: int  # where the field's head (`"name":`) starts
    value_start: int
    end: int  # just past the field's part, tail included


@dataclass(frozen=True, slots=True)
class TableSpans:
    """Where each record of a table sits; a record that is left out (null) has no entry."""

    keys: list  # sorted
    index: dict  # key -> position in `keys`
    starts: list[int]  # where the record's head (`"key":`) starts
    value_starts: list[int]
    ends: list[int]  # just past the record's part, tail included
    open: int  # where the records' opening (`{`) is
    close: int  # just past their closing


class CanonicalDoc:
    """The base text, its parts' positions, its hash, and hashing of edited versions of it."""

    def __init__(
        self,
        text: bytes,
        fields: dict[str, FieldSpan],
        tables: dict[str, TableSpans],
        order: tuple[tuple[str, FieldSpan | None], ...],
        text_format: TextFormat = CANONICAL_JSON,
    ) -> None:
        self.text = text
        self.fields = fields  # the fields present in the text
        self.tables = tables
        self.order = order  # every field, sorted, with its span (None: left out as null)
        self.format = text_format
        self._tail = len(text_format.tail)
        self._view = memoryview(text)
        self._step = step = CHECKPOINT_BYTES
        running = hashlib.sha256()
        self._checkpoints = []
        for offset in range(0, len(text) + 1, step):
            self._checkpoints.append(running.copy())
            running.update(self._view[offset : offset + step])
        self.base_hash = running.hexdigest()

    # --- comparing an episode's values with the base ---------------------------------------
    def fragment(self, value: Any) -> bytes | None:
        """A value's text in this document's format (None: left out)."""
        return self.format.fragment(value)

    def same_value(self, name: str, fragment: bytes | None) -> bool:
        span = self.fields.get(name)
        if span is None or fragment is None:
            return span is None and fragment is None
        return span.end - self._tail - span.value_start == len(fragment) and self.text.startswith(
            fragment, span.value_start
        )

    def record_changes(self, name: str, owned: dict, gone: set) -> tuple:
        """((key, fragment or None), ...) for the records of `name` that differ from the base:
        `owned` are an episode's own records (read or written), `gone` its deleted base keys."""
        table = self.tables[name]
        index, value_starts, ends, text = table.index, table.value_starts, table.ends, self.text
        fragment_of, tail = self.format.fragment, self._tail
        changes = []
        for key, value in owned.items():
            fragment = fragment_of(value)
            i = index.get(key)
            if i is None:
                if fragment is not None:
                    changes.append((key, fragment))
            elif (
                fragment is None
                or ends[i] - tail - value_starts[i] != len(fragment)
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
        view, fmt = self._view, self.format
        by_field = {change[0]: change for change in changes}
        pieces: list[tuple[int, Any]] = [(-1, fmt.open)]
        parts = 0
        for name, span in self.order:
            change = by_field.get(name)
            if change is None:
                if span is not None:
                    parts = self._separate(pieces, parts)
                    pieces.append((span.start, view[span.start : span.end]))
            elif change[1] == VALUE:
                if change[2] is not None:
                    parts = self._separate(pieces, parts)
                    pieces.append((-1, fmt.head(name) + change[2] + fmt.tail))
            else:
                assert span is not None  # a table field is never left out
                table = self.tables[name]
                parts = self._separate(pieces, parts)
                pieces.append((span.start, view[span.start : table.open]))
                pieces.append((-1, fmt.open))
                self._table_pieces(name, change[2], pieces)
                pieces.append((-1, fmt.close))
                if table.close < span.end:  # the rest of the field: a nested table's, the tail
                    pieces.append((table.close, view[table.close : span.end]))
        if parts == 1 and fmt.singleton_comma:
            pieces.append((-1, b","))
        pieces.append((-1, fmt.close))
        return pieces

    def _separate(self, pieces: list[tuple[int, Any]], parts: int) -> int:
        """A separator before the next part unless it is the first; returns the new count."""
        if parts:
            pieces.append((-1, self.format.separator))
        return parts + 1

    def _table_pieces(self, name: str, records: tuple, pieces: list[tuple[int, Any]]) -> None:
        """A dict field's records, joined by separators: runs of untouched base records as one
        slice each, changed and new records as their own parts, absent ones left out."""
        table = self.tables[name]
        keys, index, starts, ends = table.keys, table.index, table.starts, table.ends
        view, fmt = self._view, self.format
        parts: list[tuple[int, Any]] = []
        count = 0  # records written
        cursor = 0  # the first base record not yet emitted or skipped
        for key, fragment in records:
            at = index.get(key)
            position = at if at is not None else bisect_left(keys, key, lo=cursor)
            if cursor < position:
                start, end = starts[cursor], ends[position - 1]
                parts.append((start, view[start:end]))
                count += position - cursor
            if fragment is not None:
                parts.append((-1, fmt.head(key) + fragment + fmt.tail))
                count += 1
            cursor = position + 1 if at is not None else position
        if cursor < len(keys):
            start, end = starts[cursor], ends[-1]
            parts.append((start, view[start:end]))
            count += len(keys) - cursor
        for i, part in enumerate(parts):
            if i:
                pieces.append((-1, fmt.separator))
            pieces.append(part)
        if count == 1 and fmt.singleton_comma:
            pieces.append((-1, b","))


class _TextBuilder:
    """Collects byte chunks and knows the offset at which the next one starts."""

    __slots__ = ("chunks", "position")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.position = 0

    def add(self, chunk: bytes) -> int:
        """Append `chunk`; returns its offset."""
        start = self.position
        self.chunks.append(chunk)
        self.position = start + len(chunk)
        return start

    def text(self) -> bytes:
        return b"".join(self.chunks)


def build_doc(
    model: BaseModel,
    dict_fields: set[str],
    nested_tables: dict[str, str] | None = None,
    text_format: TextFormat = CANONICAL_JSON,
) -> CanonicalDoc:
    """The text of `model` in `text_format` with every part's position. `nested_tables`:
    field -> the records field of its value (see cow.py)."""
    nested_tables = nested_tables or {}
    fmt = text_format
    out = _TextBuilder()
    out.add(fmt.open)
    fields: dict[str, FieldSpan] = {}
    tables: dict[str, TableSpans] = {}
    order: list[tuple[str, FieldSpan | None]] = []
    for name in sorted(type(model).model_fields):
        value = getattr(model, name)
        is_table = name in dict_fields or name in nested_tables
        fragment = None if is_table else fmt.fragment(value)
        if not is_table and fragment is None:
            order.append((name, None))
            continue
        if fields:
            out.add(fmt.separator)
        start = out.add(fmt.head(name))
        value_start = out.position
        if name in dict_fields:
            tables[name] = _add_table(value, out, fmt)
        elif name in nested_tables:
            tables[name] = _add_nested(value, nested_tables[name], out, fmt)
        else:
            out.add(fragment)  # type: ignore[arg-type]
        out.add(fmt.tail)
        fields[name] = span = FieldSpan(start, value_start, out.position)
        order.append((name, span))
    if len(fields) == 1 and fmt.singleton_comma:
        out.add(b",")
    out.add(fmt.close)
    return CanonicalDoc(out.text(), fields, tables, tuple(order), fmt)


def _add_nested(
    value: BaseModel, records_field: str, out: _TextBuilder, fmt: TextFormat
) -> TableSpans:
    """A nested table's object: its fields sorted, left-out ones skipped, the records field
    laid out as a table."""
    out.add(fmt.open)
    table: TableSpans | None = None
    written = 0
    for name in sorted(type(value).model_fields):
        part = getattr(value, name)
        fragment = None if name == records_field else fmt.fragment(part)
        if name != records_field and fragment is None:
            continue
        if written:
            out.add(fmt.separator)
        written += 1
        out.add(fmt.head(name))
        if name == records_field:
            table = _add_table(part, out, fmt)
        else:
            out.add(fragment)  # type: ignore[arg-type]
        out.add(fmt.tail)
    if written == 1 and fmt.singleton_comma:
        out.add(b",")
    out.add(fmt.close)
    assert table is not None
    return table


def _add_table(table: dict, out: _TextBuilder, fmt: TextFormat) -> TableSpans:
    keys: list = []
    starts: list[int] = []
    value_starts: list[int] = []
    ends: list[int] = []
    add, fragment_of, head, tail, separator = (
        out.add,
        fmt.fragment,
        fmt.head,
        fmt.tail,
        fmt.separator,
    )
    opened = add(fmt.open)
    for key in sorted(table):
        fragment = fragment_of(table[key])
        if fragment is None:
            continue
        if keys:
            add(separator)
        starts.append(add(head(key)))
        value_starts.append(add(fragment))
        add(tail)
        ends.append(out.position)
        keys.append(key)
    if len(keys) == 1 and fmt.singleton_comma:
        add(b",")
    add(fmt.close)
    index = {key: i for i, key in enumerate(keys)}
    return TableSpans(keys, index, starts, value_starts, ends, opened, out.position)
