"""The canonical text of a database state assembled in full, record by record, the way the
engine did before it hashed spans of a cached base text. Slow and obviously right: the fast
hashes are checked against it."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic_core import to_jsonable_python

from servers.engine.canonical import canonical_json, key_json
from servers.engine.cow import CowDB, CowDict


def _canonical_or_none(value: Any) -> str | None:
    raw = to_jsonable_python(value)
    return None if raw is None else canonical_json(raw)


def _joined(parts: list[tuple[Any, str | None]]) -> str:
    return "{" + ",".join(f"{key_json(k)}:{frag}" for k, frag in parts if frag is not None) + "}"


def reference_text(db: CowDB) -> str:
    base = db.base
    fields = []
    for name in sorted(base.fields):
        value = db.__dict__.get(name, getattr(base.model, name))
        if isinstance(value, CowDict):
            records = sorted((key, value.peek(key)) for key in value)
            fragment: str | None = _joined([(k, _canonical_or_none(v)) for k, v in records])
        elif name in base.dict_fields and isinstance(value, dict):
            fragment = _joined(sorted((k, _canonical_or_none(v)) for k, v in value.items()))
        else:
            fragment = _canonical_or_none(value)
        fields.append((name, fragment))
    return _joined(fields)


def reference_hash(db: CowDB) -> str:
    return hashlib.sha256(reference_text(db).encode()).hexdigest()
