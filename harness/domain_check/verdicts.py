"""Why a graded simulation did not earn reward 1, in one clause, from its reward_info (the
oracle's failures and the inaction check's passes are reported with it)."""

from __future__ import annotations

from typing import Any


def failed_parts(reward_info: dict[str, Any]) -> str:
    """The parts of the reward basis that scored below 1, with what failed in each."""
    parts = []
    for part, value in (reward_info.get("reward_breakdown") or {}).items():
        if value >= 1.0 - 1e-6:
            continue
        detail = _detail(part, reward_info)
        parts.append(f"{part} {value:g}" + (f": {detail}" if detail else ""))
    return "; ".join(parts) or "no part of the reward basis failed"


def _detail(part: str, reward_info: dict[str, Any]) -> str:
    if part == "DB":
        return "the final database differs from the gold state"
    if part == "ENV_ASSERTION":
        unmet = [
            c["env_assertion"].get("func_name", "?")
            for c in reward_info.get("env_assertions") or []
            if not c.get("met")
        ]
        return f"{', '.join(unmet)} not met" if unmet else ""
    if part == "ACTION":
        missed = [
            c["action"].get("name", "?")
            for c in reward_info.get("action_checks") or []
            if not c.get("action_match")
        ]
        return f"no call matched {', '.join(missed)}" if missed else ""
    if part == "COMMUNICATE":
        missed = [
            c.get("info") for c in reward_info.get("communicate_checks") or [] if not c.get("met")
        ]
        return f"never said {', '.join(repr(m) for m in missed)}" if missed else ""
    if part == "NL_ASSERTION":
        missed = [
            c.get("nl_assertion")
            for c in reward_info.get("nl_assertions") or []
            if not c.get("met")
        ]
        return f"{len(missed)} NL assertion(s) not met" if missed else ""
    return ""
