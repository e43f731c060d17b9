"""The original τ-bench's data hash, as a text format for the engine's span-indexed hashing.

The original hashes `str()` of its data made hashable: every dict becomes a tuple of
`(key, value)` pairs sorted by key, every list a tuple (sets, which JSON data never holds, sorted
tuples), recursively; the text is CPython's repr of that, utf-8 encoded, and the hash its sha256.
The data is a dict of tables, each a dict of records, so the text is the engine's shape of keyed
parts sorted by key: `(('orders', (('#W0000011', (...)), ...)), ...)`. Written as a `TextFormat`,
it lets an episode's hash reuse the base text and re-dump only the records the episode changed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from tau_mcp.servers.domains.tau_bench.records import Record, fields_of
from tau_mcp.servers.engine.canonical_doc import TextFormat


def hashable(value: Any) -> Any:
    """JSON-like `value` (records and other models as their JSON) with dicts as key-sorted
    tuples of pairs and lists as tuples."""
    if isinstance(value, Record):
        value = fields_of(value)
    elif isinstance(value, BaseModel):
        value = to_jsonable_python(value)
    if isinstance(value, dict):
        return tuple((key, hashable(item)) for key, item in sorted(value.items()))
    if isinstance(value, list):
        return tuple(hashable(item) for item in value)
    if isinstance(value, set):
        return tuple(sorted(hashable(item) for item in value))
    return value


def _fragment(value: Any) -> bytes:
    # repr, as the value is written inside the enclosing tuple (str() of a tuple is its repr)
    return repr(hashable(value)).encode("utf-8")


def _head(key: str) -> bytes:
    return b"(" + repr(key).encode("utf-8") + b", "


DATA_HASH = TextFormat(
    fragment=_fragment,
    head=_head,
    tail=b")",
    open=b"(",
    close=b")",
    separator=b", ",
    singleton_comma=True,
)
