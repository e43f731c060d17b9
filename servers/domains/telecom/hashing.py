"""What the telecom state hash ignores: the ids of bills created during an episode.

The reference names new draft bills with random ids, so the recorded hashes name every bill
that is not in the base data by its position among the new bills: `B_NEW_0`, `B_NEW_1`, ...
(in the order of the bills table), wherever the id appears in either database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tau_mcp.servers.engine.domain import EpisodeView

NEW_BILL_PREFIX = "B_NEW_"


def new_bill_aliases(bills: list[dict[str, Any]], base_ids: set[str]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for bill in bills:
        bill_id = bill.get("bill_id")
        if isinstance(bill_id, str) and bill_id not in base_ids and bill_id not in aliases:
            aliases[bill_id] = f"{NEW_BILL_PREFIX}{len(aliases)}"
    return aliases


def _rename(value: Any, aliases: dict[str, str]) -> Any:
    if isinstance(value, str):
        return aliases.get(value, value)
    if isinstance(value, dict):
        return {k: _rename(v, aliases) for k, v in value.items()}
    if isinstance(value, list):
        return [_rename(v, aliases) for v in value]
    return value


def hash_view(episode: EpisodeView, snapshot: dict[str, Any]) -> dict[str, Any]:
    """The snapshot with new bills renamed; untouched when the episode created none."""
    agent = snapshot.get("agent_db") or {}
    base_ids = {bill.bill_id for bill in episode.domain.base.model.bills}
    aliases = new_bill_aliases(agent.get("bills") or [], base_ids)
    if not aliases:
        return snapshot
    return {side: _rename(db, aliases) for side, db in snapshot.items()}
