"""`tau-harness view`: results files on the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from harness.cli.common import console, fail
from harness.report import print_conversation, print_summary, simulations_table, task_rates_table
from harness.results import ResultsError, load_results


def view(
    files: list[Path] = typer.Argument(..., help="One or more results files."),
    sim: str = typer.Option(
        None,
        "--sim",
        help="A task id (all its trials), a simulation id, or a unique prefix of one.",
    ),
    only_failed: bool = typer.Option(
        False, "--only-failed", help="Only simulations that did not pass (failed or errored)."
    ),
    why: bool = typer.Option(
        False, "--why", help="Print why each simulation failed (its diagnosis and any review)."
    ),
) -> None:
    """Show results files: summary, per-task pass rates and simulations, or conversations."""
    from harness.report.console import print_diagnosis, print_review
    from harness.report.summary import PASS, outcome

    loaded: list[tuple[Path, dict[str, Any]]] = []
    for file in files:
        try:
            loaded.append((file, load_results(file)))
        except ResultsError as exc:
            fail(str(exc))
    if sim is not None:
        found = find_simulations([s for _, d in loaded for s in d["simulations"]], sim)
        if only_failed:
            found = [s for s in found if outcome(s) != PASS]
        if not found:
            fail(f"no {'failed ' if only_failed else ''}simulation '{sim}' in the given files")
        for one in found:
            if why:
                if not print_diagnosis(console, one):
                    console.print(f"simulation {one.get('id')} passed: nothing to diagnose")
                print_review(console, one)
            else:
                print_conversation(console, one)
        return
    if why:
        failed = [s for _, d in loaded for s in d["simulations"] if outcome(s) != PASS]
        for one in failed:
            if not print_diagnosis(console, one):
                console.print(
                    f"simulation {one.get('id')} (task {one.get('task_id')}) failed before "
                    "tau-mcp diagnosed failures; re-grade it with tau-harness evaluate"
                )
            print_review(console, one)
        if not failed:
            console.print("no failed simulations")
        return
    for file, document in loaded:
        sims = document["simulations"]
        print_summary(console, sims, f"{file.name}", info=document.get("info"), label=str(file))
        console.print(task_rates_table(sims))
        shown = [s for s in sims if outcome(s) != PASS] if only_failed else sims
        console.print(simulations_table(shown))


def find_simulations(sims: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """An exact simulation id, then an exact task id (every trial), then a unique id prefix."""
    exact = [s for s in sims if str(s.get("id")) == key]
    if exact:
        return exact
    by_task = [s for s in sims if str(s.get("task_id")) == key]
    if by_task:
        return sorted(by_task, key=lambda s: int(s.get("trial") or 0))
    prefixed = [s for s in sims if str(s.get("id", "")).startswith(key)]
    if len(prefixed) > 1:
        fail(f"'{key}' matches {len(prefixed)} simulation ids; give more of the id")
    return prefixed
