"""Where `tau-harness evaluate` writes: never over a run in progress, never half a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tau_mcp.harness.results import ResultsError, atomic_write, journal_path, results_text


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
    try:
        atomic_write(save_to, results_text(document))
    except OSError as exc:
        raise ResultsError(
            f"cannot write the re-graded results to {save_to} ({exc.strerror or exc}); "
            "nothing was written there, choose a writable --save-to"
        ) from None
