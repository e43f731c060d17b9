"""Canonical JSON and hashing of database snapshots.

The canonical form (see the conformance README): reference JSON layout, keys whose value is null
dropped, integral floats written as integers, keys sorted, no whitespace. Two states hash equal
exactly when the reference would consider their databases equal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode


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


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_hash(value: Any) -> str:
    return sha256_text(canonical_json(value))


def key_json(key: str) -> str:
    return json.dumps(key)
