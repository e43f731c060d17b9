"""Writing results in our layout, so that a killed run loses nothing and no key is written.

Each finished simulation is appended at once to a journal beside the results file
(`<file>.journal.jsonl`, one JSON line per simulation). The results file itself is rewritten
atomically (temporary sibling, then rename) at most every few seconds and at the end, so readers
only ever see a complete file and a long run does not rewrite a large file after every
simulation. Reading a results file (`load.py`) folds in its journal; a finished run removes it.

The bytes are the `tau-mcp` layout's writer's (`layouts.py`): a run's file and a document written
whole at once (`evaluate`, `review`) come out the same for the same simulations.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from tau_mcp.harness import redaction
from tau_mcp.harness.results.layouts import ours_text, serialize_simulation, tau_mcp_text
from tau_mcp.harness.results.record import RunHeader, RunInfo, SimulationRecord


class ResultsError(ValueError):
    pass


class ResultsWriteError(ResultsError):
    """The results file or its journal could not be written (disk full, read-only, ...)."""


SAVE_INTERVAL_S = 5.0


def journal_path(path: Path) -> Path:
    return path.with_name(path.name + ".journal.jsonl")


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


def write_document(path: Path, document: dict[str, Any]) -> None:
    """A whole results document at once, in our layout (keys redacted, as every writer
    redacts them), whole or not at all; raises OSError."""
    atomic_write(path, tau_mcp_text(document))


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
        write_document(save_to, document)
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
        self, path: Path | None, info: RunInfo | dict[str, Any], tasks: list[dict[str, Any]]
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.header = RunHeader.begin(info, tasks)
        #: The simulations so far, as the file holds them (layout dicts, keys redacted).
        self.simulations: list[dict[str, Any]] = []
        self._serialized: list[str] = []
        self._last_save = 0.0
        self.on_disk = 0  # how many of `simulations` a rerun would find (file or journal)
        self._journal_checked = False

    def add(self, simulation: SimulationRecord | dict[str, Any], save: bool = True) -> None:
        """Record a simulation (a record, or one read from a results file). With `save`, it
        is on disk (journal) before this returns; a failed write raises ResultsWriteError
        saying what is kept and how to go on."""
        if isinstance(simulation, SimulationRecord):
            simulation = simulation.layout()
        line = json.dumps(simulation, default=str)
        secrets = redaction.secrets_in_play()
        if secrets and redaction.leaks(line, secrets):
            simulation = redaction.redact(simulation, secrets)
            line = json.dumps(simulation, default=str)
        self.simulations.append(simulation)
        self._serialized.append(serialize_simulation(simulation))
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
        return ours_text(self.header, self._serialized)

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
