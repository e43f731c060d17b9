"""Turning a tool's return value into the text the reference shows for it.

The reference renders strings as they are and everything else as JSON: pydantic models through
their python-mode dump, numbers and booleans as their `str()` (so `True` becomes the JSON string
"True"), and anything JSON cannot encode (dates) through `str()`.
"""

from __future__ import annotations

import json
import warnings
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel

# Like the reference, some failing calls leave wrongly typed values in a record; dumping such a
# record makes pydantic warn on every render. The value is rendered all the same, so the warning
# is only noise in server logs.
warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)


def _prepare(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, str) or value is None:
        return value
    if isinstance(value, (bool, int, float)):
        return str(value)
    if isinstance(value, list):
        return [_prepare(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_prepare(v) for v in value)
    if isinstance(value, dict):
        return {k: _prepare(v) for k, v in value.items()}
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    raise ValueError(f"Unsupported type: {type(value)}")


# `json.dumps(value, default=str)`'s text, without its check for circular references (a third of
# its cost on a record): a prepared value is a fresh tree of dicts and lists, so it has none.
_ENCODER = json.JSONEncoder(default=str, check_circular=False)


def render_result(value: Any) -> str:
    if isinstance(value, str):
        return value
    return _ENCODER.encode(_prepare(value))


def render_error(exc: BaseException) -> str:
    return f"Error: {exc}"


def parse_output(text: str) -> Any:
    """Tool text as a value when it is JSON, else the text itself (for output comparison)."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return text
