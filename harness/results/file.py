"""Results files in the reference's layout, written so that a killed run loses nothing.

Each finished simulation is appended at once to a journal beside the results file
(`<file>.journal.jsonl`, one JSON line per simulation). The results file itself is rewritten
atomically (temporary sibling, then rename) at most every few seconds and at the end, so readers
only ever see a complete file and a long run does not rewrite a large file after every
simulation. Reading a results file folds in its journal; a finished run removes the journal.

Every reader (resume, `view`, `report`, `evaluate`, serve) gets a file through `load_results`,
which also refuses what a hand edit can break: two different results for one (task, trial), or a
simulation of a task the file (or the domain) does not have. Exact copies of one simulation are
folded into one; see docs/harness.md.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from tau_mcp.conversation.messages import now
from tau_mcp.harness import redaction
from tau_mcp.harness.metrics import INFRA
from tau_mcp.harness.results.folder import LayoutError, dir_paths, read_dir
from tau_mcp.harness.results.record import shape_problem


class ResultsError(ValueError):
    pass


class ResultsWriteError(ResultsError):
    """The results file or its journal could not be written (disk full, read-only, ...)."""


SAVE_INTERVAL_S = 5.0


def journal_path(path: Path) -> Path:
    return path.with_name(path.name + ".journal.jsonl")


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
    if dir_paths(path) is not None:
        try:
            data: Any = read_dir(path)
        except LayoutError as exc:
            raise ResultsError(str(exc)) from None
    else:
        data, text = _read_single(path)
    if isinstance(data, list):
        data = {"info": None, "tasks": [], "simulations": data}
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list):
        raise ResultsError(f"{path} is neither a results file nor a list of simulations")
    if not isinstance(data.get("info"), dict | None) or not isinstance(
        data.get("tasks"), list | None
    ):
        raise ResultsError(f"{path} has a malformed header ('info' or 'tasks')")
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


def _read_single(path: Path) -> tuple[Any, str]:
    """A one-file results document, and its text (searched for keys before anything is
    walked)."""
    try:
        text = path.read_text(encoding="utf-8")
        return json.loads(text), text
    except FileNotFoundError:
        raise ResultsError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, text: str) -> None:
    """Write `path` whole or not at all, with the permissions a plain open() would give it
    (mkstemp alone would make it 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def results_text(document: dict[str, Any]) -> str:
    """A whole results document as written by a command that writes one at once (`evaluate`),
    keys redacted as ResultsFile redacts them."""
    return json.dumps(redaction.redact_document(document), indent=1, default=str)


def refuse_unfinished_run(save_to: Path) -> None:
    """A results file with a journal beside it belongs to a run that has not finished; writing
    over it would mix the re-graded simulations with that run's journal when it is read."""
    if journal_path(save_to).exists():
        raise ResultsError(
            f"{save_to} belongs to an unfinished run ({journal_path(save_to).name} is beside "
            "it); finish it with `tau-harness run ... --save-to` that file, or choose another "
            "--save-to"
        )


def write_regraded(save_to: Path, document: dict[str, Any]) -> None:
    """`evaluate`'s output: the whole re-graded document at once, never half a file."""
    try:
        atomic_write(save_to, results_text(document))
    except OSError as exc:
        raise ResultsError(
            f"cannot write the re-graded results to {save_to} ({exc.strerror or exc}); "
            "nothing was written there, choose a writable --save-to"
        ) from None


class ResultsFile:
    """A results document being built: header once, simulations appended as they finish.

    This is where records are written, so it is where keys are kept out of them (see
    `tau_mcp.harness.redaction`): the header's model arguments are redacted by name, and every secret
    in play is replaced by value in the header and in each simulation (an error text that
    echoes a key, a program's output that prints one) before it reaches the journal, the file
    or the in-memory list the summary is printed from."""

    def __init__(
        self, path: Path | None, info: dict[str, Any], tasks: list[dict[str, Any]]
    ) -> None:
        self.path = Path(path) if path is not None else None
        info = redaction.redact(redaction.redact_header(info))
        self.header = {"timestamp": now(), "info": info, "tasks": tasks}
        self.simulations: list[dict[str, Any]] = []
        self._serialized: list[str] = []
        self._last_save = 0.0
        self.on_disk = 0  # how many of `simulations` a rerun would find (file or journal)
        self._journal_checked = False

    def add(self, simulation: dict[str, Any], save: bool = True) -> None:
        """Record a simulation. With `save`, it is on disk (journal) before this returns;
        a failed write raises ResultsWriteError saying what is kept and how to go on."""
        line = json.dumps(simulation, default=str)
        secrets = redaction.secrets_in_play()
        if secrets and redaction.leaks(line, secrets):
            simulation = redaction.redact(simulation, secrets)
            line = json.dumps(simulation, default=str)
        self.simulations.append(simulation)
        self._serialized.append(json.dumps(simulation, indent=1, default=str))
        if save and self.path is not None:
            self._append_to_journal(line + "\n")
            self.on_disk += 1
            if time.monotonic() - self._last_save >= SAVE_INTERVAL_S:
                self.save()

    def _append_to_journal(self, line: str) -> None:
        journal = journal_path(self.path)
        try:
            with journal.open("ab") as fh:
                size = fh.tell()
                if not self._journal_checked:
                    # A run killed mid-write leaves a torn last line; end it, so the next
                    # simulation is not glued to it (read_journal skips the torn one).
                    self._journal_checked = True
                    if size and _last_byte(journal) != b"\n":
                        fh.write(b"\n")
                        size += 1
                try:
                    fh.write(line.encode("utf-8"))
                    fh.flush()
                except OSError:
                    _truncate(journal, size)  # no half line left behind
                    raise
        except OSError as exc:
            raise self._write_error(exc) from None

    def _write_error(self, exc: OSError) -> ResultsWriteError:
        reason = exc.strerror or type(exc).__name__
        if not self.on_disk:
            return ResultsWriteError(
                f"cannot write results to {self.path} ({reason}); "
                "free some space or choose a writable --save-to"
            )
        return ResultsWriteError(
            f"cannot write results to {self.path} ({reason}); the {self.on_disk} finished "
            f"simulation(s) so far are kept in {self.path} and {journal_path(self.path).name}: "
            "free some space or fix the permissions, then rerun with the same --save-to to "
            "finish the rest"
        )

    def text(self) -> str:
        head = json.dumps(self.header, indent=1, default=str)
        body = ",\n".join(self._serialized)
        return (
            f'{head[:-2]},\n "simulations": [\n{body}\n ]\n}}\n' if head.endswith("\n}") else head
        )

    def save(self) -> None:
        """Rewrite the results file with every simulation so far (the journal stays, in case
        more simulations are appended after this save)."""
        if self.path is not None:
            try:
                atomic_write(self.path, self.text())
            except OSError as exc:
                raise self._write_error(exc) from None
            self._last_save = time.monotonic()
            self.on_disk = len(self.simulations)

    def finish(self) -> None:
        """Final save; the journal is then redundant and removed."""
        self.save()
        if self.path is not None:
            journal_path(self.path).unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the results file and journal this run wrote (nothing of value in them)."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            journal_path(self.path).unlink(missing_ok=True)

    def document(self) -> dict[str, Any]:
        return {**self.header, "simulations": self.simulations}


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1)


def _truncate(path: Path, size: int) -> None:
    try:
        os.truncate(path, size)
    except OSError:
        pass  # best effort; read_journal ignores a torn last line anyway
