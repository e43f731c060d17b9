"""The gold state of a task: where its databases should end up, computed one way for every
grader (the harness's runs and re-grades, the server's Eval Protocol grade, the benchmarks) and
for the diagnosis of a failed DB check (its changed records, or its snapshot)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from tau_mcp.servers.engine.cow import BaseState
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.tasks import Task


def gold_hashes_of(domain: Domain, task: Task) -> dict[str, str | None]:
    """The gold DB hashes as the reference's grader computes them (see `gold_episode`)."""
    return gold_episode(domain, task).hashes()


@dataclass(frozen=True)
class GoldChanges:
    """The gold state as the diagnosis compares it: `Episode.changed_records()` of the gold
    episode, and the base each database's changes are over (`tau_mcp.grading.db_diff.diff_changes`)."""

    records: dict[str, Any]
    bases: dict[str, BaseState | None]


def gold_changes_of(domain: Domain, task: Task, episode: Episode | None = None) -> GoldChanges:
    """The task's gold changes, from its gold `episode` when the caller kept it."""
    episode = episode if episode is not None else gold_episode(domain, task)
    user = episode.user_db
    return GoldChanges(
        episode.changed_records(),
        {"agent_db": episode.agent_db.base, "user_db": user.base if user is not None else None},
    )


def gold_episode(domain: Domain, task: Task) -> Episode:
    """The gold state as the reference's grader builds it: the task's initial state,
    then each gold action applied straight to its side's tools. A failing action is skipped
    with whatever it changed kept, and no domain sync runs after the actions (the reference
    syncs only while setting up the initial state), so in telecom the phone's surroundings are
    not refreshed from the carrier's records after the gold actions."""
    episode = Episode(domain, f"gold-{uuid.uuid4().hex}", task)
    actions = (task.evaluation_criteria.actions if task.evaluation_criteria else None) or []
    for action in actions:
        toolkit = episode.toolkit("user" if action.requestor == "user" else "agent")
        try:
            if toolkit is None or not toolkit.has_tool(action.name):
                raise ValueError(f"Tool '{action.name}' not found.")
            toolkit.bound(action.name)(**(action.arguments or {}))
        except Exception:  # noqa: BLE001, S112 - the reference logs and goes on
            continue
    return episode
