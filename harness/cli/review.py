"""`tau-harness review FILE`: the reference's LLM review of every simulation of a results file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from tau_mcp.harness import redaction
from tau_mcp.harness.cli.common import REVIEW_LLM_HELP, console, fail
from tau_mcp.harness.cli.progress import Progress
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.results import ResultsError, load_results, write_document
from tau_mcp.servers.engine.errors import DataError


def review(
    file: Path = typer.Argument(..., help="A results file (ours or the reference's)."),
    mode: str = typer.Option(
        "full", "--mode", "-m", help="full (agent and user, plus authentication) or user."
    ),
    review_llm: str = typer.Option(None, "--review-llm", "--review-model", help=REVIEW_LLM_HELP),
    output: Path = typer.Option(
        None, "-o", "--output", help="Where to write (default: results_reviewed.json beside FILE)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file."),
    max_concurrency: int = typer.Option(32, "--max-concurrency", "-c", min=1),
    task_ids: list[str] = typer.Option(
        None, "--task-ids", help="Only these tasks (the others are left out of the output)."
    ),
    limit: int = typer.Option(
        None, "--limit", min=1, help="Only the first N simulations (the others are left out)."
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Data folder with the reference texts (default $TAU2_DATA_DIR)."
    ),
    show_details: bool = typer.Option(
        False, "--show-details", help="Print each simulation's review after the counts."
    ),
    interruption_enabled: bool = typer.Option(
        False,
        "--interruption-enabled",
        help="The reference's option for voice (full-duplex) runs, which tau-mcp does not "
        "have: refused.",
    ),
    log_llm: bool = typer.Option(
        False,
        "--log-llm",
        help="The reference's option to log each review call; tau-mcp keeps each review, its "
        "cost and usage in the output file instead (ignored, with a note).",
    ),
) -> None:
    """Review simulations with an LLM the way the reference's `tau2 review` does: errors of the
    agent and of the user simulator with severities, and the authentication outcome. The
    reviews are saved with each simulation; their cost is reported apart."""
    from tau_mcp.harness.preflight import check_models
    from tau_mcp.harness.review import Reviewer, ReviewSettings, default_output, review_document
    from tau_mcp.servers.engine.data import resolve_data_dir

    if interruption_enabled:
        fail(
            "tau-mcp has no voice (full-duplex) mode, so no simulation was interrupted; drop --interruption-enabled"
        )
    if log_llm:
        typer.echo("note: --log-llm ignored: each review is saved in the output file", err=True)
    target = output or default_output(file)
    try:
        document = load_results(file)
        if target.exists() and not overwrite:
            raise ConfigError(f"{target} exists; pass --overwrite to replace it or -o elsewhere")
        reviewer = Reviewer.for_data(ReviewSettings(mode, review_llm), resolve_data_dir(data_dir))
        check_models([reviewer.model_use()])
    except (ConfigError, DataError, ResultsError) as exc:
        fail(str(exc))
    ids = [p for value in task_ids or [] for p in value.replace(",", " ").split() if p]
    try:
        with Progress(
            TextColumn("[bold]review"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
        ) as progress:
            bar = progress.add_task("review", total=None)
            outcome = asyncio.run(
                review_document(
                    reviewer,
                    document,
                    max_concurrency,
                    ids or None,
                    limit,
                    lambda: progress.advance(bar),
                )
            )
    except ConfigError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(f"interrupted; nothing was written to {target}", err=True)
        raise typer.Exit(130) from None
    try:
        write_document(target, outcome.document)  # our layout, keys redacted, as every writer
    except OSError as exc:
        fail(f"cannot write {target} ({exc.strerror or exc}); nothing was written there")
    _print_outcome(outcome, reviewer.mode, reviewer.model, target)
    if show_details:
        from tau_mcp.harness.report.console import print_review

        for sim in outcome.document["simulations"]:
            print_review(console, sim)


def _print_outcome(outcome, mode: str, model: str, target: Path) -> None:
    from tau_mcp.harness.report.reviews import review_counts

    counts = review_counts(outcome.document["simulations"])
    console.print(f"reviewed {outcome.reviewed} simulation(s) with {model} (mode {mode})")
    if mode == "full":
        console.print(
            f"  with errors {counts['with_errors']}, agent errors {counts['agent_error']}, "
            f"user errors {counts['user_error']} (critical {counts['critical_user_error']}); "
            "authentication: " + ", ".join(f"{k} {v}" for k, v in counts["auth"].items())
        )
    else:
        console.print(
            f"  with user-simulator errors {counts['user_only_with_errors']}, "
            f"critical {counts['user_only_critical']}"
        )
    if outcome.skipped:
        console.print(
            f"[yellow]{len(outcome.skipped)} simulation(s) not reviewed: their task is not in "
            "the file's task list[/]"
        )
    if outcome.failed:
        console.print(
            f"[yellow]{len(outcome.failed)} review(s) failed and were saved empty, as the "
            f"reference saves them; first: {redaction.redact_text(outcome.failed[0])}[/]"
        )
    console.print(f"Saved reviewed results to: {target}")
    console.print(f"Review cost: ${outcome.cost:.4f}")
