"""What the LLM reviews saved with simulations say, counted for reports and the console.

Reviews are the reference's (`tau-harness review`, `run --auto-review`): `review` with
`auth_classification` (mode full) or `user_only_review` (mode user), set on each simulation.
"""

from __future__ import annotations

from typing import Any

from tau_mcp.grading.review import review_cost

AUTH_STATUSES = ("succeeded", "failed", "not_needed")


def _review(sim: dict[str, Any], name: str) -> dict[str, Any] | None:
    value = sim.get(name)
    return value if isinstance(value, dict) else None


def has_review(sim: dict[str, Any]) -> bool:
    return _review(sim, "review") is not None or _review(sim, "user_only_review") is not None


def user_caused(sim: dict[str, Any]) -> bool:
    """A full review blames the user simulator for the outcome: some user error is
    `critical_hindered` and no agent error is `critical`. (A user-only review cannot say so:
    the reference's parser turns a critical user severity into a parse failure.)"""
    review = _review(sim, "review")
    if review is None:
        return False
    errors = [e for e in review.get("errors") or [] if isinstance(e, dict)]
    hindered = any(
        e.get("source") == "user" and e.get("severity") == "critical_hindered" for e in errors
    )
    agent_critical = any(
        e.get("source") == "agent" and e.get("severity") == "critical" for e in errors
    )
    return hindered and not agent_critical


def review_counts(sims: list[dict[str, Any]]) -> dict[str, Any]:
    """How many simulations have reviews, and what the reviews found."""
    counts: dict[str, Any] = {
        "reviewed": 0,
        "with_errors": 0,
        "agent_error": 0,
        "user_error": 0,
        "critical_user_error": 0,
        "user_caused": 0,
        "auth": {status: 0 for status in AUTH_STATUSES},
        "user_only_reviewed": 0,
        "user_only_with_errors": 0,
        "user_only_critical": 0,
    }
    for sim in sims:
        review = _review(sim, "review")
        if review is not None:
            counts["reviewed"] += 1
            for key in ("agent_error", "user_error", "critical_user_error"):
                counts[key] += bool(review.get(key))
            counts["with_errors"] += bool(review.get("has_errors"))
            counts["user_caused"] += user_caused(sim)
        auth = _review(sim, "auth_classification")
        if auth is not None and auth.get("status") in AUTH_STATUSES:
            counts["auth"][auth["status"]] += 1
        user_only = _review(sim, "user_only_review")
        if user_only is not None:
            counts["user_only_reviewed"] += 1
            counts["user_only_with_errors"] += bool(user_only.get("has_errors"))
            counts["user_only_critical"] += bool(user_only.get("critical_user_error"))
    return counts


def reviews_cost(sims: list[dict[str, Any]]) -> float | None:
    """What the reviews saved with these simulations cost together; None when none has one."""
    costs = [c for s in sims if (c := review_cost(s)) is not None]
    return sum(costs) if costs else None


def review_digest(sim: dict[str, Any]) -> dict[str, Any] | None:
    """A simulation's reviews in a few fields (the report's grid cell); None without any."""
    if not has_review(sim):
        return None
    review = _review(sim, "review") or {}
    user_only = _review(sim, "user_only_review") or {}
    auth = _review(sim, "auth_classification") or {}
    return {
        "summary": review.get("summary") or user_only.get("summary") or "",
        "has_errors": bool(review.get("has_errors") or user_only.get("has_errors")),
        "agent_error": bool(review.get("agent_error")),
        "user_error": bool(review.get("user_error") or user_only.get("user_error")),
        "critical_user_error": bool(
            review.get("critical_user_error") or user_only.get("critical_user_error")
        ),
        "user_caused": user_caused(sim),
        "auth": auth.get("status"),
    }
