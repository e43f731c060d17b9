"""The data loads and validates: databases against their records, tasks against the task model,
unique task ids, the splits the domain declares (naming tasks that exist), the policies, and
reward bases the grader knows.

Everything later needs the databases and tasks: `check_data` says whether they loaded."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tau_mcp.grading.grader import KNOWN_BASES
from tau_mcp.harness.domain_check.findings import Finding, error
from tau_mcp.servers.engine import data as datafiles
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.variants import Variant


def check_data(domain: Domain) -> tuple[list[Finding], bool]:
    """The data findings, and whether the databases and tasks loaded (later checks need them)."""
    findings: list[Finding] = []
    loaded = True
    for what, read in (
        ("database", lambda: domain.base),
        ("user database", lambda: domain.user_base),
        ("tasks", lambda: domain.tasks),
    ):
        try:
            read()
        except EngineError as exc:
            findings.append(error("data", f"the {what} does not load: {exc}"))
            loaded = False
    if not loaded:
        return findings, False
    findings += _duplicate_ids(domain)
    findings += _splits(domain)
    findings += _reward_bases(domain)
    return findings, True


def check_policies(domain: Domain, variant: Variant | None) -> tuple[list[Finding], str]:
    """The policy findings, and the agent's policy text ("" when it does not load)."""
    reads = [("policy", lambda: variant.policy(None) if variant is not None else domain.policy())]
    if domain.supports_solo:
        reads.append(("solo policy", lambda: domain.policy(solo=True)))
    findings = []
    texts = []
    for what, read in reads:
        try:
            text = read()
        except EngineError as exc:
            findings.append(error("data", f"the {what} does not load: {exc}"))
            text = None
        if text is not None and not text.strip():
            findings.append(error("data", f"the {what} is empty"))
        texts.append(text or "")
    return findings, texts[0]


def _raw_tasks(domain: Domain) -> list[Any]:
    """The task entries as the files hold them, before ids key them (a repeated id would
    silently replace the earlier task)."""
    folder = domain.folder
    if domain.spec.load_tasks is not None:  # its own loader names each task (τ-bench: by position)
        return []
    if domain.task_set_file is not None:
        return datafiles.load_structured(folder / domain.task_set_file)
    if domain.spec.task_files is not None:
        paths = sorted(folder.glob(domain.spec.task_files))
        return [datafiles.load_structured(path) for path in paths]
    return datafiles.load_structured(folder / "tasks.json")


def _duplicate_ids(domain: Domain) -> list[Finding]:
    counts = Counter(str(item.get("id")) for item in _raw_tasks(domain) if isinstance(item, dict))
    return [
        error("data", f"{count} tasks share the id '{task_id}': only the last one is served")
        for task_id, count in counts.items()
        if count > 1
    ]


def _splits(domain: Domain) -> list[Finding]:
    try:
        splits = domain.splits
    except EngineError as exc:
        return [error("data", f"the splits do not load: {exc}")]
    findings = []
    if domain.task_set is None:
        for name in domain.spec.splits:
            if name not in splits:
                findings.append(
                    error("data", f"the domain declares split '{name}', which the data lacks")
                )
    for name, ids in splits.items():
        if not isinstance(ids, list):
            findings.append(error("data", f"split '{name}' is not a list of task ids"))
            continue
        unknown = [str(task_id) for task_id in ids if str(task_id) not in domain.tasks]
        if unknown:
            findings.append(
                error(
                    "data",
                    f"split '{name}' names {len(unknown)} task(s) that do not exist "
                    f"(first: '{unknown[0]}')",
                )
            )
    return findings


def _reward_bases(domain: Domain) -> list[Finding]:
    findings = []
    for task in domain.tasks.values():
        criteria = task.evaluation_criteria
        unknown = sorted(set(criteria.reward_basis) - KNOWN_BASES) if criteria else []
        if unknown:
            findings.append(
                error(
                    "data",
                    f"the reward basis names {', '.join(unknown)}, which the grader does not "
                    f"know (known: {', '.join(sorted(KNOWN_BASES))})",
                    task=task.id,
                )
            )
    return findings
