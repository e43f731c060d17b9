"""What a run tells its user when it ends badly: infrastructure errors, an interrupt.

A run whose simulations failed for infrastructure reasons (model or server unreachable after
every retry) must not look like a success: the progress bar counts them and the command exits
nonzero. An interrupted run says how much of it is safe on disk and how to finish it.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from tau_mcp.harness.metrics import INFRA
from tau_mcp.harness.results import ResultsError, load_results

INTERRUPTED_EXIT = 130  # the shell's convention for a command stopped by SIGINT


def interrupted_exit(stopped: BaseException) -> int:
    """The exit status of a run stopped by a signal, as the shell reports one: 128 + its
    number (130 for Ctrl-C, 143 for SIGTERM, which `tau_mcp.harness.api.RunStopped` carries)."""
    return 128 + int(getattr(stopped, "signum", signal.SIGINT))


def infra_count(simulations: list[dict[str, Any]]) -> int:
    return sum(1 for sim in simulations if sim.get("termination_reason") == INFRA)


def progress_rate(passed: int, graded: int, infra: int) -> str:
    """The bar's pass rate over graded simulations, with infrastructure errors beside it
    (they are not graded, so they would otherwise hide behind a perfect rate)."""
    rate = f"{passed / graded:.1%}" if graded else "-"
    if infra:
        rate += f" [bold red]{infra} infrastructure error{'s' if infra != 1 else ''}[/]"
    return rate


def infra_failure_message(simulations: list[dict[str, Any]], save_to: Path | None) -> str | None:
    """One sentence for a run some of whose simulations ended in infrastructure errors."""
    failed = infra_count(simulations)
    if not failed:
        return None
    where = f" with --save-to {save_to}" if save_to else ""
    return (
        f"{failed} of {len(simulations)} simulations ended in an infrastructure error after "
        f"every retry (causes above); rerun the same command{where} to retry only those"
    )


def interrupted_message(save_to: Path | None) -> str:
    """One sentence for a run stopped with Ctrl-C: how many simulations are safe, and how to
    go on (resuming keeps them and runs only the rest)."""
    if save_to is None:
        return "interrupted; nothing was saved"
    try:
        sims = load_results(Path(save_to))["simulations"]
    except ResultsError:
        return f"interrupted before any simulation was saved to {save_to}"
    kept = len(sims) - infra_count(sims)
    return (
        f"interrupted: {kept} finished simulation{'s' if kept != 1 else ''} saved in "
        f"{save_to}; rerun the same command (same --save-to) to run only the rest"
    )


def stopped_message(reason: str, save_to: Path | None) -> str:
    """One sentence for a run stopped part-way (its server gone): why, what is kept, and how
    to go on once the cause is fixed."""
    reason = f"{reason}, so the run stopped"
    if save_to is None:
        return f"{reason}; nothing was saved"
    try:
        sims = load_results(Path(save_to))["simulations"]
    except ResultsError:
        return (
            f"{reason}; no simulation had finished: restart the server and rerun the same command"
        )
    kept = len(sims) - infra_count(sims)
    return (
        f"{reason}; {kept} finished simulation{'s' if kept != 1 else ''} are kept in {save_to}: "
        "restart the server and rerun the same command (same --save-to) to run only the rest"
    )
