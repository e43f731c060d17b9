"""`tau-harness view`: results files on the terminal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from tau_mcp.harness.cli.common import console, fail
from tau_mcp.harness.report import (
    print_conversation,
    print_summary,
    simulations_table,
    task_rates_table,
)
from tau_mcp.harness.report.summary import agent_label, settings_of
from tau_mcp.harness.results import ResultsError, load_results


def view(
    files: list[Path] = typer.Argument(
        None, help="Results files (none: list the results files of --dir)."
    ),
    file: list[Path] = typer.Option(
        None, "--file", help="A results file (the reference's spelling; same as FILES)."
    ),
    folder: Path = typer.Option(
        None,
        "--dir",
        help="With no FILES: list the results files in this folder (default: ./results).",
    ),
    sim: str = typer.Option(
        None,
        "--sim",
        help="A task id (all its trials), a simulation id, or a unique prefix of one.",
    ),
    only_failed: bool = typer.Option(
        False,
        "--only-failed",
        "--only-show-failed",
        help="Only simulations that did not pass (failed or errored).",
    ),
    only_all_failed: bool = typer.Option(
        False,
        "--only-show-all-failed",
        "--only-all-failed",
        help="Only the tasks that failed in every trial (their simulations).",
    ),
    why: bool = typer.Option(
        False, "--why", help="Print why each simulation failed (its diagnosis and any review)."
    ),
    expanded_ticks: bool = typer.Option(
        False,
        "--expanded-ticks",
        help="The reference's option for voice (full-duplex) runs; tau-mcp runs are text "
        "only, so there are no ticks to expand.",
    ),
) -> None:
    """Show results files: summary, per-task pass rates and simulations, or conversations;
    with no file, list the results files of a folder."""
    from tau_mcp.harness.report.console import print_diagnosis, print_review
    from tau_mcp.harness.report.summary import PASS, outcome

    files = [*(files or []), *(file or [])]
    if not files:
        list_results(folder or Path("results"))
        return
    loaded: list[tuple[Path, dict[str, Any]]] = []
    for file in files:
        try:
            loaded.append((file, load_results(file)))
        except ResultsError as exc:
            fail(str(exc))

    def kept(sims: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The simulations the filters let through (the summaries count every one)."""
        if only_all_failed:
            sims = all_failed(sims)
        return [s for s in sims if outcome(s) != PASS] if only_failed else sims

    if sim is not None:
        found = find_simulations([s for _, d in loaded for s in kept(d["simulations"])], sim)
        if not found:
            failed = "failed " if only_failed or only_all_failed else ""
            fail(f"no {failed}simulation '{sim}' in the given files")
        for one in found:
            if why:
                if not print_diagnosis(console, one):
                    console.print(f"simulation {one.get('id')} passed: nothing to diagnose")
                print_review(console, one)
            else:
                print_conversation(console, one)
        return
    if why:
        failed = [s for _, d in loaded for s in kept(d["simulations"]) if outcome(s) != PASS]
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
        shown = kept(sims)
        # with a filter, the task table keeps the tasks of the simulations shown (each with
        # all its trials counted), so a task that always passed is not listed
        filtered = only_failed or only_all_failed
        tasks = {str(s.get("task_id")) for s in shown} if filtered else None
        console.print(task_rates_table(sims, tasks))
        console.print(simulations_table(shown))


def all_failed(sims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The simulations of the tasks none of whose trials passed."""
    from tau_mcp.harness.report.summary import PASS, outcome

    passed = {str(s.get("task_id")) for s in sims if outcome(s) == PASS}
    return [s for s in sims if str(s.get("task_id")) not in passed]


def list_results(folder: Path) -> None:
    """One line per results file in `folder`: what ran and how it scored."""
    from rich.table import Table

    from tau_mcp.harness.metrics import summarize

    if not folder.is_dir():
        fail(f"no results files given, and no folder {folder} to list (give FILES or --dir)")
    candidates = sorted(
        [p for p in folder.iterdir() if p.suffix == ".json" and p.is_file()]
        + [p for p in folder.iterdir() if (p / "results.json").is_file()]
    )
    table = Table(title=f"Results files in {folder}", header_style="bold")
    for column in ("file", "domain", "agent", "user", "simulations", "pass^1"):
        table.add_column(column, justify="right" if column in ("simulations", "pass^1") else "left")
    skipped = 0
    for path in candidates:
        try:
            document = load_results(path)
        except ResultsError:
            skipped += 1
            continue
        info = document.get("info") or {}
        figures = summarize(document["simulations"])
        pass_1 = figures.pass_hat.get(1)
        table.add_row(
            path.name,
            str((info.get("environment_info") or {}).get("domain_name") or "-"),
            str(agent_label(settings_of(document)) or "-"),
            str((info.get("user_info") or {}).get("implementation") or "-"),
            str(len(document["simulations"])),
            "-" if pass_1 is None else f"{pass_1:.1%}",
        )
    if not table.rows:
        fail(f"no results files in {folder}")
    console.print(table)
    if skipped:
        console.print(f"{skipped} other JSON file(s) in {folder} are not results files")
    console.print("tau-harness view FILE shows one.")


def find_simulations(sims: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """An exact simulation id, then an exact task id (every trial), then a unique id prefix."""
    from tau_mcp.harness.results.select import find_simulations as find

    try:
        return find(sims, key)
    except ResultsError as exc:
        fail(str(exc))
