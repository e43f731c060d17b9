"""Comparing two graders' verdicts on the same simulation."""

from __future__ import annotations

from typing import Any

_ROW_KEYS = {
    "env_assertions": ("env_assertion", "met", "reward"),
    "action_checks": ("action", "action_match", "action_reward", "tool_type"),
    "communicate_checks": ("info", "met"),
    "nl_assertions": ("nl_assertion", "met"),
}


def comparable(reward_info: dict[str, Any] | None) -> dict[str, Any] | None:
    """The parts of a reward_info two graders must agree on: reward, every component's
    verdicts, basis and breakdown (justifications, notes and free-text info aside)."""
    if reward_info is None:
        return None
    out: dict[str, Any] = {
        "reward": reward_info.get("reward"),
        "db_check": reward_info.get("db_check"),
        "reward_basis": reward_info.get("reward_basis"),
        "reward_breakdown": reward_info.get("reward_breakdown"),
    }
    for name, keys in _ROW_KEYS.items():
        items = reward_info.get(name)
        out[name] = None if not items else [{k: row.get(k) for k in keys} for row in items]
    return out
