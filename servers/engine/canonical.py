"""Canonical JSON and hashing of database snapshots.

The canonical form (see the conformance README): reference JSON layout, keys whose value is null
dropped, integral floats written as integers, keys sorted, no whitespace. Two states hash equal
exactly when the reference would consider their databases equal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic_core import to_jsonable_python

# ensure_ascii stays on (the default): canonical texts are pure ASCII, so a character offset in
# one is also its byte offset, which the span bookkeeping in canonical_doc.py relies on. JSON
# dumps cannot be circular, so the encoder need not track containers (about 10% faster).
_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), check_circular=False).encode


def normalize(value: Any) -> Any:
    """Drop null-valued keys and turn integral floats into ints, recursively."""
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def canonical_json(value: Any) -> str:
    return _dumps(normalize(value))


def canonical_fragment(value: Any) -> str | None:
    """`canonical_json(to_jsonable_python(value))`, or None where that value is null.

    Fast path: pydantic drops None-valued model fields itself, and when the dump then holds no
    `null` and no integral float (Python writes those as `<digits>.0` or, from 1e16 up, with
    `e+`), `normalize` would have changed nothing, so the pure-Python walk is skipped. The test
    is conservative: a string that merely contains such text only costs the slow path. Both
    paths assume, like pydantic's own `exclude_none`, that no serializer turns None into
    something else (no model here has a custom serializer; the tests compare every record).
    """
    raw = to_jsonable_python(value, exclude_none=True)
    if raw is None:
        return None
    text = _dumps(raw)
    if "null" in text or "e+" in text or (".0" in text and _may_hold_integral_float(text)):
        return canonical_json(raw)
    return text


def _may_hold_integral_float(text: str) -> bool:
    return ".0," in text or ".0}" in text or ".0]" in text or text.endswith(".0")


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_hash(value: Any) -> str:
    return sha256_text(canonical_json(value))


def key_json(key: str) -> str:
    return json.dumps(key)
