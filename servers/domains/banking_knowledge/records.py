"""Reading and writing records the way the banking tools do.

Tools look records up with constraints written as JSON text (`{"user_id": "..."}`, built by
pasting the caller's value into the text, so a quote in it makes the JSON invalid, as in the
reference) and show the matches as a numbered list of `field: value` lines. Constraint keys may
carry an operator suffix (`amount__gt`); a comparison that cannot be made counts as no match.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tau_mcp.servers.domains.banking_knowledge.models import TABLE_NAMES

# Text of an empty lookup; tools test for it (and for a wording no lookup produces, as the
# reference does) to tell "nothing found" from a listing.
NOTHING = ("No records found", "No results found")


def _contains(a: Any, b: Any) -> bool:
    return b in a if a is not None else False


def _starts(a: Any, b: Any) -> bool:
    return str(a).startswith(str(b)) if a is not None else False


def _ends(a: Any, b: Any) -> bool:
    return str(a).endswith(str(b)) if a is not None else False


_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
    "contains": _contains,
    "startswith": _starts,
    "endswith": _ends,
    "in": lambda a, b: a in b,
    "nin": lambda a, b: a not in b,
}


def matches(record: Mapping[str, Any], constraints: Mapping[str, Any]) -> bool:
    for key, expected in constraints.items():
        field, op = key.rsplit("__", 1) if "__" in key else (key, "eq")
        compare = _OPERATORS.get(op, operator.eq)
        try:
            if not compare(record.get(field), expected):
                return False
        except (TypeError, ValueError):
            return False
    return True


def select(
    table: Mapping[str, Any], constraints: Mapping[str, Any], limit: Any = None
) -> list[tuple[str, Any]]:
    """(id, record) of the matching records in stored order. Records are shared: read only."""
    found = []
    for record_id, record in table.items():
        if matches(record, constraints):
            found.append((record_id, record))
            if limit is not None and len(found) >= limit:
                break
    return found


def listing(table_name: str, found: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """Records as the tools show them: a count line, then each record's fields."""
    found = list(found)
    lines = [f"Found {len(found)} record(s) in '{table_name}':\n"]
    for number, (record_id, record) in enumerate(found, 1):
        lines.append(f"{number}. Record ID: {record_id}")
        lines.extend(f"   {field}: {value}" for field, value in record.items())
        lines.append("")
    return "\n".join(lines)


# Keyword names the reference's query function takes itself; a constraint named like one of
# them collides with it (`limit` is taken as the result limit).
_OWN_KEYWORDS = ("db", "return_ids")


def query(db: Any, table_name: str, constraints_text: str = "{}") -> str:
    """The matching records of a table as text, or an error text (never an exception)."""
    try:
        if table_name not in TABLE_NAMES:
            return f"Error: Database '{table_name}' not found. Available: {list(TABLE_NAMES)}"
        try:
            constraints = json.loads(constraints_text) if constraints_text else {}
        except json.JSONDecodeError as exc:
            return f"Error: Invalid JSON: {exc}"
        constraints = dict(constraints)
        for key in constraints:
            if key in _OWN_KEYWORDS:
                raise TypeError(f"query_db() got multiple values for keyword argument '{key}'")
        if "db_name" in constraints:
            raise TypeError("query_db() got multiple values for argument 'db_name'")
        limit = constraints.pop("limit", None)
        found = select(getattr(db, table_name).data, constraints, limit)
        if not found:
            return f"No records found in '{table_name}'."
        return listing(table_name, found)
    except Exception as exc:  # noqa: BLE001 - the reference reports any failure as text
        return f"Error querying database: {exc}"


def lookup(db: Any, table_name: str, field: str, value: Any) -> str:
    """Records whose `field` equals `value`, the constraint written as the tools write it."""
    return query(db, table_name, f'{{"{field}": "{value}"}}')


def found_any(text: str) -> bool:
    return not any(phrase in text for phrase in NOTHING)


def peek(data: Any, record_id: Any) -> Any:
    """A record to read (shared: never change it), or None when there is none."""
    return data.peek(record_id) if record_id in data else None


def add(table: Any, record_id: Any, record: dict[str, Any]) -> bool:
    """Store a new record; False (and nothing stored) when the id is taken."""
    if record_id in table.data:
        return False
    table.data[record_id] = record
    return True


def parse_money(value: Any) -> float:
    """A balance stored as a number or as text like '$2,850.00'; anything else is 0."""
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return float(value.replace("$", "").replace(",", ""))
    return 0.0


def balance(account: Mapping[str, Any]) -> float:
    """An account's balance: `current_holdings`, else `balance`, else 0."""
    return parse_money(account.get("current_holdings", account.get("balance", 0)))
