"""`tau-harness report`: an offline report of one or more runs."""

from __future__ import annotations

from pathlib import Path

import typer

from tau_mcp.harness.cli.common import console, fail
from tau_mcp.harness.results import ResultsError


def report(
    files: list[Path] = typer.Argument(..., help="One or more results files (runs to compare)."),
    output: Path = typer.Option(
        None, "-o", "--output", help="Where to write (default: report.html; md/json: stdout)."
    ),
    fmt: str = typer.Option("html", "--format", help="html, md or json."),
) -> None:
    """Write a report: pass^k with 95% intervals, costs, a task x trial grid with every
    conversation, and paired tests between runs over the same tasks."""
    from tau_mcp.harness.report.build import ReportError, write_report

    try:
        written, report_data = write_report(files, fmt, output)
    except (ReportError, ResultsError) as exc:
        fail(str(exc))
    if written is None:
        return
    console.print(f"report written to {written}")
    for comparison in report_data["comparisons"]:  # the judges' agreement, said at once
        if comparison.get("judges"):
            console.print(f"judges: {comparison['judges']['statement']}", highlight=False)
