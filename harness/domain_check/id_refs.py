"""Ids the gold names exist: every argument the gold actions and env assertions pass under an id
name (`id`, `*_id`, `*_ids`; inside JSON-text arguments too) holds a value some record has, as a
key or a value, in the domain's databases or the state the task's gold actions reach (so ids
its set-up or gold create count). A gold action naming an id nothing holds is an error (it cannot do what
the task means); an env assertion doing so is a warning (it checks nothing that exists, and an
assertion such as "no overdue bill X" then always holds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tau_mcp.harness.domain_check.findings import Finding, error, warning
from tau_mcp.harness.domain_check.gold_replay import GoldRun, actions_of
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode


def collect_values(value: Any, out: set[str]) -> set[str]:
    """Every key and scalar value inside `value`, as text."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            out.update(str(key) for key in item)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, str):
            out.add(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            out.add(str(item))
    return out


def named_ids(arguments: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, str]]:
    """(argument path, id) for each id-named argument, JSON-text arguments opened."""
    for name, value in arguments.items():
        if isinstance(value, str) and value.lstrip().startswith("{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        if isinstance(value, dict):
            yield from named_ids(value, f"{prefix}{name}.")
            continue
        if not (name == "id" or name.endswith("_id") or name.endswith("_ids")):
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, (str, int)) and not isinstance(item, bool) and str(item):
                yield f"{prefix}{name}", str(item)


class IdIndex:
    """The values of the domain's base databases, read once. An id found there is known; only a
    task naming one that is not reads its own final state (ids its set-up or gold created)."""

    def __init__(self, domain: Domain) -> None:
        bare = Episode(domain, "domain-check-ids", None)
        self.base = frozenset(collect_values(bare.snapshot(), set()))
        bare.close()

    def check(self, run: GoldRun) -> list[Finding]:
        if run.episode is None:
            return []
        task = run.task
        criteria = task.evaluation_criteria
        named = [
            (True, index, action.name, path, value)
            for index, action in enumerate(actions_of(task))
            for path, value in named_ids(action.arguments)
        ]
        named += [
            (False, 0, assertion.func_name, path, value)
            for assertion in (criteria.env_assertions if criteria else None) or []
            for path, value in named_ids(assertion.arguments)
        ]
        named = [entry for entry in named if entry[4] not in self.base]
        if not named:
            return []
        known = collect_values(run.episode.changed_records(), set())
        findings = []
        for in_action, index, name, path, value in named:
            if value in known:
                continue
            if in_action:
                message = f"gold action {index} passes {path}={value!r}, which no record holds"
                findings.append(error("id-refs", message, task.id, name))
            else:
                message = f"the env assertion passes {path}={value!r}, which no record holds"
                findings.append(warning("id-refs", message, task.id, name))
        return findings
