"""Which calls of discoverable agent tools are written to the `agent_discoverable_tools` log.

The log is part of the graded database. Calls of tools that change state are always logged.
Calls of read-only tools are logged only when the task's gold actions call that tool through
`call_discoverable_agent_tool` (the "read-log allowlist"): a task that requires a read can then
check for it, while an agent's extra precautionary reads do not change the graded state.
"""

from __future__ import annotations

from typing import Any


def allowlist(task: Any) -> frozenset[str]:
    """Names of the discoverable tools the task's gold actions call (none without a task)."""
    criteria = getattr(task, "evaluation_criteria", None)
    if criteria is None:
        return frozenset()
    names = set()
    for action in criteria.actions or []:
        if action.name == "call_discoverable_agent_tool":
            name = (action.arguments or {}).get("agent_tool_name")
            if name:
                names.add(name)
    return frozenset(names)


def is_logged(name: str, mutates: bool, allowed: frozenset[str]) -> bool:
    return mutates or name in allowed
