"""Legal, but suspicious: warnings a domain's author should read before trusting a score.

- `reward-basis`: a part of the reward basis with nothing to check scores 1.0 for anyone (the
  grader skips the DB check of a task listing neither actions nor env assertions; ACTION,
  ENV_ASSERTION, COMMUNICATE and NL_ASSERTION with no items pass);
- `unused-criteria`: what a task lists to check but leaves out of its reward basis;
- `nl-judge`: NL assertions in the reward with no judge given to this check;
- `no-gold-actions`: a task with no gold actions (the oracle, gt and solo agents have nothing
  to follow; its gold state is its initial state);
- `policy-mention`: an agent tool the policy never mentions: neither its name, nor its name's
  words spaced out, nor every distinctive word of its name (each matched by its stem) appear in
  the policy, so an agent reading the policy learns nothing of when to use it.
"""

from __future__ import annotations

import re

from tau_mcp.harness.domain_check.findings import Finding, warning
from tau_mcp.servers.engine.tasks import EvaluationCriteria, Task

#: Words of a tool name that say nothing of what it acts on.
GENERIC_WORDS = frozenset(
    "a all an and as at by check find for from get id in info details is list of on or set "
    "the to update with".split()
)

#: reward-basis part -> the criteria field it checks.
PART_ITEMS = {
    "ACTION": "actions",
    "ENV_ASSERTION": "env_assertions",
    "COMMUNICATE": "communicate_info",
    "NL_ASSERTION": "nl_assertions",
}


def check_tasks(tasks: list[Task], judged: bool) -> list[Finding]:
    findings: list[Finding] = []
    for task in tasks:
        criteria = task.evaluation_criteria
        if criteria is None:
            continue
        findings += _vacuous_parts(task, criteria)
        findings += _unused(task, criteria)
        if not judged and "NL_ASSERTION" in criteria.reward_basis and criteria.nl_assertions:
            findings.append(
                warning(
                    "nl-judge",
                    "its NL assertions count in the reward, but no judge was given "
                    "(--judge-llm), so nothing here checked that they can be met or failed",
                    task.id,
                )
            )
        if not criteria.actions:
            findings.append(
                warning(
                    "no-gold-actions",
                    "the task has no gold actions: the oracle, gt and solo agents have "
                    "nothing to follow",
                    task.id,
                )
            )
    return findings


def _vacuous_parts(task: Task, criteria: EvaluationCriteria) -> list[Finding]:
    findings = []
    basis = criteria.reward_basis
    if "DB" in basis and criteria.actions is None and criteria.env_assertions is None:
        findings.append(
            warning(
                "reward-basis",
                "DB is in the reward basis, but the task lists neither actions nor env "
                "assertions, so the grader skips the DB check and scores it 1.0",
                task.id,
            )
        )
    for part, field in PART_ITEMS.items():
        if part in basis and not getattr(criteria, field):
            findings.append(
                warning(
                    "reward-basis",
                    f"{part} is in the reward basis, but the task lists no {field}, so it "
                    "scores 1.0 for anyone",
                    task.id,
                )
            )
    return findings


def _unused(task: Task, criteria: EvaluationCriteria) -> list[Finding]:
    basis = set(criteria.reward_basis)
    findings = []
    for part, field in PART_ITEMS.items():
        if part == "ACTION":
            continue  # gold actions are also the gold state (DB) and the oracle's plan
        if getattr(criteria, field) and part not in basis:
            findings.append(
                warning(
                    "unused-criteria",
                    f"the task lists {field}, but {part} is not in its reward basis, so "
                    "they are never checked",
                    task.id,
                )
            )
    return findings


def check_policy(policy: str, tool_names: list[str]) -> list[Finding]:
    text = policy.lower()
    words = set(re.findall(r"[a-z0-9]+", text))
    return [
        warning(
            "policy-mention",
            "the policy never mentions this agent tool (nor the words of its name)",
            tool=name,
        )
        for name in tool_names
        if not _mentioned(name, text, words)
    ]


def _mentioned(name: str, text: str, words: set[str]) -> bool:
    lowered = name.lower()
    if lowered in text or lowered.replace("_", " ") in text:
        return True
    parts = [
        p
        for p in re.split(r"[^a-z0-9]+", _split_camel(name).lower())
        if p and p not in GENERIC_WORDS and not p.isdigit()
    ]
    return bool(parts) and all(_stem_in(part, words) for part in parts)


def _split_camel(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)


def _stem_in(part: str, words: set[str]) -> bool:
    """`part` or a word sharing its stem (all but its last three letters, at least four)."""
    stem = part if len(part) <= 4 else part[: max(4, len(part) - 3)]
    return any(word.startswith(stem) for word in words)
