"""Reading a results file for use: every reader (resume, `view`, `report`, `evaluate`, `review`,
`submit`, serve) gets a file through `load_results`.

It reads any layout (ours, the reference's `json` or `dir`, or a bare list of simulations),
folds in the journal of an unfinished run, checks the header and every simulation against
`record.py`'s models, and refuses what a hand edit can break: two different results for one
(task, trial), or a simulation of a task the file (or the domain) does not have. Exact copies of
one simulation are folded into one; see docs/harness.md. The document comes back as the file
holds it (dicts in the file's own key order), so a tool that writes it again changes nothing it
did not mean to; `records()` gives its simulations as typed records.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from tau_mcp.harness import redaction
from tau_mcp.harness.results.file import ResultsError, journal_path
from tau_mcp.harness.results.folder import LayoutError, dir_paths, read_dir, read_json_text
from tau_mcp.harness.results.record import INFRA, RunHeader, SimulationRecord, shape_problem


def read_journal(path: Path) -> list[dict[str, Any]]:
    """Simulations recorded in a results file's journal; a torn last line (the process was
    killed mid-write) is ignored."""
    journal = journal_path(Path(path))
    if not journal.is_file():
        return []
    sims = []
    for line in journal.read_text(encoding="utf-8").splitlines():
        try:
            sims.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return sims


def load_results(path: Path, task_ids: Collection[str] | None = None) -> dict[str, Any]:
    """A results file (with its journal folded in), a bare list of simulations wrapped as one,
    or the reference's folder layout (results.json + simulations/, given as either).

    Refused in one sentence: a file that is not one, a malformed simulation, two different
    results for one (task, trial), and a simulation of a task that is not among the file's tasks
    (when it lists them) or, given `task_ids`, not a task of the domain."""
    path = Path(path)
    text: str | None = None  # the data as read, when it is one file
    try:
        if dir_paths(path) is not None:
            data: Any = read_dir(path)
        else:
            data, text = read_json_text(path)
    except LayoutError as exc:
        raise ResultsError(str(exc)) from None
    if isinstance(data, list):
        data = {"info": None, "tasks": [], "simulations": data}
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list):
        raise ResultsError(f"{path} is neither a results file nor a list of simulations")
    header = RunHeader.problem(data)
    if header:
        raise ResultsError(f"{path} {header}")
    problem = shape_problem(data["simulations"])
    if problem:
        raise ResultsError(f"{path} cannot be used: {problem}")
    known = {sim.get("id") for sim in data["simulations"]}
    extra = [
        sim
        for sim in read_journal(path)
        if isinstance(sim, dict) and sim.get("id") not in known and not shape_problem([sim])
    ]
    if extra:
        data["simulations"] = [*data["simulations"], *extra]
    data["simulations"] = _one_result_per_trial(path, data["simulations"])
    check_tasks(path, data, task_ids)
    if text is None:
        text = json.dumps(data, default=str)
    return _without_keys(data, text + "".join(json.dumps(sim, default=str) for sim in extra))


def _without_keys(data: dict[str, Any], text: str) -> dict[str, Any]:
    """A file written before keys were redacted (or by another tool) shows none to a reader:
    the header's recorded model arguments are redacted by name, and the keys they held (with
    every other secret in play) by value throughout. `text` is the data as read, searched
    once for the secrets before anything is walked."""
    info = data.get("info")
    secrets = sorted(
        set(redaction.secrets_in_play()) | redaction.header_secrets(info), key=len, reverse=True
    )
    if isinstance(info, dict):
        data["info"] = redaction.redact_header(info)
    if secrets and redaction.leaks(text, secrets):
        data = redaction.redact(data, secrets)
    return data


def _trial_key(sim: dict[str, Any]) -> tuple[str, int]:
    return str(sim.get("task_id")), int(sim.get("trial") or 0)


def _canonical(sim: dict[str, Any]) -> str:
    return json.dumps(sim, sort_keys=True, default=str)


def _one_result_per_trial(path: Path, sims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The simulations with exact copies folded; two different results for one (task, trial)
    are refused, naming them. Infrastructure-error records are attempts, not results: any
    number of them may sit beside a result (readers count them as they see fit)."""
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for sim in sims:
        # a simulation without a trial number (a hand-made list) is no copy of another
        if sim.get("termination_reason") != INFRA and sim.get("trial") is not None:
            results.setdefault(_trial_key(sim), []).append(sim)
    conflicts = []
    drop: set[int] = set()
    for key, copies in results.items():
        if len(copies) < 2:
            continue
        first = _canonical(copies[0])
        if all(_canonical(c) == first for c in copies[1:]):
            drop.update(id(c) for c in copies[1:])
        else:
            conflicts.append((key, copies))
    if conflicts:
        (task, trial), copies = conflicts[0]
        ids = ", ".join(str(c.get("id")) for c in copies[:4])
        more = f" (and {len(conflicts) - 1} more (task, trial) pairs)" if len(conflicts) > 1 else ""
        raise ResultsError(
            f"{path} holds {len(copies)} different results for task '{task}' trial {trial} "
            f"(simulations {ids}){more}; keep one of them and delete the others"
        )
    return [sim for sim in sims if id(sim) not in drop] if drop else sims


def check_tasks(path: Path, data: dict[str, Any], task_ids: Collection[str] | None = None) -> None:
    """Refuse a simulation of a task the file does not list or (given `task_ids`) the domain
    does not have."""
    listed = {str(t.get("id")) for t in data.get("tasks") or [] if isinstance(t, dict)}
    for sim in data["simulations"]:
        task = str(sim.get("task_id"))
        if listed and task not in listed:
            raise ResultsError(
                f"{path} holds simulation {sim.get('id')} of task '{task}', which is not among "
                f"the file's {len(listed)} tasks; remove that simulation or restore its task"
            )
        if task_ids is not None and task not in task_ids:
            raise ResultsError(
                f"{path} holds simulation {sim.get('id')} of task '{task}', which is not a task "
                "of this domain; remove that simulation or use the domain it was run on"
            )


def records(document: dict[str, Any]) -> list[SimulationRecord]:
    """The simulations of a document `load_results` returned, as typed records (checked
    already, so taken as they are; nested values are shared with the document)."""
    return [SimulationRecord.trusted(sim) for sim in document["simulations"]]
