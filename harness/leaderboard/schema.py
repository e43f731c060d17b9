"""The board's JSON schema for `submission.json`, read from the data folder at run time.

The schema is the reference's (`tau2/leaderboard/schema.json` in the data folder); nothing of
it is copied here. It also tells which domains the board has (the properties of its `Results`).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from tau_mcp.servers.engine.data import resolve_data_dir

SCHEMA_PATH = Path("tau2") / "leaderboard" / "schema.json"
SUBMISSIONS_PATH = Path("tau2") / "leaderboard" / "submissions"


class SchemaError(ValueError):
    """The schema cannot be found or read."""


def schema_file(data_dir: Path | None = None) -> Path:
    return resolve_data_dir(data_dir) / SCHEMA_PATH


@lru_cache(maxsize=4)
def _load(path: Path) -> dict[str, Any]:
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SchemaError(
            f"the leaderboard schema {path} is missing; point --data-dir or TAU2_DATA_DIR at "
            "the reference data (it holds tau2/leaderboard/schema.json)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"cannot read the leaderboard schema {path} ({exc})") from None
    if not isinstance(schema, dict):
        raise SchemaError(f"the leaderboard schema {path} is not a JSON object")
    return schema


def load_schema(data_dir: Path | None = None) -> dict[str, Any]:
    return _load(schema_file(data_dir))


def board_domains(schema: dict[str, Any]) -> list[str]:
    """The domains a submission can hold results for, in the schema's order."""
    results = schema.get("$defs", {}).get("Results", {}).get("properties", {})
    return list(results)


def schema_problems(submission: Any, schema: dict[str, Any]) -> list[str]:
    """Every way `submission` breaks the schema, one sentence each, in document order."""
    from jsonschema import Draft7Validator, FormatChecker

    validator = Draft7Validator(schema, format_checker=FormatChecker())
    errors = [_innermost(e) for e in validator.iter_errors(submission)]
    problems = []
    for error in sorted(errors, key=lambda e: [str(p) for p in e.absolute_path]):
        where = "/".join(str(p) for p in error.absolute_path) or "the top level"
        problems.append(f"{where}: {_short(error)}")
    return problems


def _innermost(error: Any) -> Any:
    """For "one of these shapes" (a value or null): the reason the value's own shape failed,
    rather than "is not null"."""
    while error.validator == "anyOf" and error.context:
        shaped = [e for e in error.context if e.validator != "type"] or list(error.context)
        error = max(shaped, key=lambda e: len(e.absolute_path))
    return error


def _short(error: Any) -> str:
    """jsonschema's message without the whole offending value (it can be a large object)."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        extra = ", ".join(repr(k) for k in error.instance if k not in known)
        return f"field(s) {extra} not allowed"
    if error.validator == "type" and isinstance(error.instance, dict | list):
        return f"is not of type {error.validator_value!r}"
    return error.message
