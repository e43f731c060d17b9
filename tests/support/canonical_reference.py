"""The canonical text of a database state assembled in full, record by record, the way the
engine did before it hashed spans of a cached base text. Slow and obviously right: the fast
hashes are checked against it."""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from tau_mcp.servers.engine.canonical import canonical_json, key_json
from tau_mcp.servers.engine.cow import CowDB, CowDict


def _canonical_or_none(value: Any) -> str | None:
    raw = to_jsonable_python(value)
    return None if raw is None else canonical_json(raw)


def _joined(parts: list[tuple[Any, str | None]]) -> str:
    return "{" + ",".join(f"{key_json(k)}:{frag}" for k, frag in parts if frag is not None) + "}"


def _nested_fragment(value: Any, records_field: str) -> str | None:
    """A nested table's canonical object, its records laid out like a dict field's."""
    parts = []
    for name in sorted(type(value).model_fields):
        part = getattr(value, name)
        if name == records_field:
            items = (
                part.items() if not isinstance(part, CowDict) else [(k, part.peek(k)) for k in part]
            )
            parts.append((name, _joined(sorted((k, _canonical_or_none(v)) for k, v in items))))
        else:
            parts.append((name, _canonical_or_none(part)))
    return _joined(parts)


def reference_text(db: CowDB) -> str:
    base = db.base
    fields = []
    for name in sorted(base.fields):
        value = db.__dict__.get(name, getattr(base.model, name))
        if name in base.nested_tables and isinstance(value, BaseModel):
            fragment: str | None = _nested_fragment(value, base.nested_tables[name])
        elif isinstance(value, CowDict):
            records = sorted((key, value.peek(key)) for key in value)
            fragment = _joined([(k, _canonical_or_none(v)) for k, v in records])
        elif name in base.dict_fields and isinstance(value, dict):
            fragment = _joined(sorted((k, _canonical_or_none(v)) for k, v in value.items()))
        else:
            fragment = _canonical_or_none(value)
        fields.append((name, fragment))
    return _joined(fields)


def reference_hash(db: CowDB) -> str:
    return hashlib.sha256(reference_text(db).encode()).hexdigest()
