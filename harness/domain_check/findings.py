"""What a domain check reports: findings (one sentence each, an error or a warning, about a
task, a tool or the whole domain) and the report that collects them with the stages' timings."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any


class Severity(StrEnum):
    ERROR = "error"  # the domain is not proven: a score on it cannot be trusted
    WARNING = "warning"  # legal, but suspicious: worth a look before trusting a score


#: The checks, in the order the report lists them (within a severity), with what each proves.
CHECKS: dict[str, str] = {
    "data": "the databases, tasks, splits and policies load and validate",
    "initial-state": "each task's initial state sets up",
    "tool-description": "every tool has a description",
    "tool-parameters": "every tool parameter has a type",
    "tool-schema": "every listed input schema is valid JSON Schema for an object",
    "tool-names": "tool names are unique across the agent and user sides",
    "task-refs": "tasks name only tools, functions and sides that exist",
    "gold-action": "every gold action runs without an error",
    "id-refs": "ids the gold names are held by some record",
    "gold-assertions": "the gold actions meet the task's env assertions",
    "determinism": "replaying the gold twice gives the same state",
    "oracle": "the oracle agent and scripted user reach reward 1.0",
    "inaction": "doing nothing does not earn reward 1.0",
    "reward-basis": "every part of the reward basis has something to check",
    "unused-criteria": "what a task lists to check is part of its reward",
    "nl-judge": "NL assertions have a judge",
    "no-gold-actions": "the task has gold actions",
    "policy-mention": "the policy mentions every agent tool",
}


@dataclass(frozen=True)
class Finding:
    """One thing a check found. `task` and `tool` say what it is about (both None: the domain)."""

    severity: Severity
    check: str
    message: str
    task: str | None = None
    tool: str | None = None

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"unknown check '{self.check}'")

    @property
    def subject(self) -> str:
        """What the table's task/tool column shows."""
        parts = [p for p in (self.task, self.tool) if p]
        return " · ".join(parts) if parts else "-"

    def as_json(self) -> dict[str, Any]:
        return {
            "severity": self.severity.value,
            "check": self.check,
            "task": self.task,
            "tool": self.tool,
            "message": self.message,
        }


def error(check: str, message: str, task: str | None = None, tool: str | None = None) -> Finding:
    return Finding(Severity.ERROR, check, message, task, tool)


def warning(check: str, message: str, task: str | None = None, tool: str | None = None) -> Finding:
    return Finding(Severity.WARNING, check, message, task, tool)


@dataclass
class Report:
    """A domain's findings, what was checked, and how long each stage took."""

    domain: str
    data_dir: Path
    variant: str | None = None
    judge: str | None = None
    findings: list[Finding] = field(default_factory=list)
    #: How much each stage looked at (tasks, tools, gold actions, simulations).
    counts: dict[str, int] = field(default_factory=dict)
    #: Seconds each stage took, in the order they ran.
    timings: dict[str, float] = field(default_factory=dict)
    #: Stages that did not run, with why (e.g. the tasks did not load).
    skipped: dict[str, str] = field(default_factory=dict)

    def add(self, findings: list[Finding]) -> None:
        self.findings.extend(findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        """Proven: no error (warnings allowed)."""
        return not self.errors

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1

    def sorted_findings(self) -> list[Finding]:
        """Errors first, then by check (CHECKS order), keeping each check's own order."""
        order = {name: index for index, name in enumerate(CHECKS)}
        severity = {Severity.ERROR: 0, Severity.WARNING: 1}
        return sorted(self.findings, key=lambda f: (severity[f.severity], order[f.check]))

    def as_json(self) -> dict[str, Any]:
        return {
            "domain": self.domain,
            "data_dir": str(self.data_dir),
            "retrieval_config": self.variant,
            "judge": self.judge,
            "ok": self.ok,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "counts": dict(self.counts),
            "timings": {stage: round(seconds, 3) for stage, seconds in self.timings.items()},
            "skipped": dict(self.skipped),
            "findings": [f.as_json() for f in self.sorted_findings()],
        }
