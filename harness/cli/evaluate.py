"""`tau-harness evaluate`: re-grade saved simulations by replaying them on fresh episodes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from harness.backends import InfrastructureError
from harness.cli.common import (
    JUDGE_HELP,
    console,
    fail,
    judge_option,
    load_domain,
    open_backend,
)
from harness.preflight import check_models, judge_use, needs_judge
from harness.report import print_summary
from harness.results import ResultsError, load_results
from harness.results_lock import results_lock
from harness.run_outcome import INTERRUPTED_EXIT
from servers.engine.errors import EngineError


def evaluate(
    domain: str = typer.Option(..., "--domain"),
    input: Path = typer.Option(
        ..., "--input", help="A results file or a JSON list of simulations."
    ),
    save_to: Path = typer.Option(..., "--save-to", help="Where to write the re-graded results."),
    data_dir: Path = typer.Option(None, "--data-dir"),
    judge_llm: str = typer.Option(None, "--judge-llm", help=JUDGE_HELP),
    judge_llm_args: str = typer.Option(None, "--judge-llm-args"),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(None, "--server-token", envvar="TAU_SERVER_TOKEN"),
    max_concurrency: int = typer.Option(8, "--max-concurrency", min=1),
) -> None:
    """Re-grade saved simulations by replaying their tool calls on fresh episodes."""
    from conversation.reference_texts import reference_texts
    from harness.evaluate import check_domain, tasks_of
    from harness.evaluate_output import refuse_unfinished_run, write_regraded

    judge = judge_option(judge_llm, judge_llm_args)
    try:
        document = load_results(input)
        check_domain(document, domain, input)
        loaded = load_domain(domain, data_dir)
        if judge is not None and needs_judge(tasks_of(loaded, document)):
            check_models([judge_use(judge.for_texts(reference_texts(loaded.data_dir)))])
        with results_lock(save_to):  # no run may write there meanwhile
            refuse_unfinished_run(save_to)
            graded = asyncio.run(
                _evaluate(loaded, document, judge, server, server_token, max_concurrency)
            )
            write_regraded(save_to, graded)
    except (EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(f"interrupted; nothing was written to {save_to}", err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    print_summary(console, graded["simulations"], f"{domain}: re-graded {input.name}")
    console.print(f"re-graded results saved to {save_to}")


async def _evaluate(domain, document, judge, server, token, concurrency) -> dict[str, Any]:
    from grading import Grader
    from harness.evaluate import regrade

    backend = await open_backend(domain, server, token)
    try:
        return await regrade(backend, domain, Grader(backend, domain, judge), document, concurrency)
    finally:
        await backend.close()
