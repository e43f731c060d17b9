"""`tau-harness evaluate`: re-grade saved simulations by replaying them on fresh episodes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import typer

from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.cli.common import (
    JUDGE_HELP,
    RETRIEVAL_KWARGS_HELP,
    TASK_SET_HELP,
    console,
    fail,
    judge_option,
    load_domain,
    open_backend,
    retrieval_kwargs_option,
)
from tau_mcp.harness.preflight import check_models, judge_use, needs_judge
from tau_mcp.harness.report import print_summary
from tau_mcp.harness.results import ResultsError, load_results
from tau_mcp.harness.results.lock import results_lock
from tau_mcp.harness.run_outcome import INTERRUPTED_EXIT
from tau_mcp.servers.engine.errors import EngineError


def evaluate(
    domain: str = typer.Option(
        None,
        "--domain",
        "-d",
        help="Domain of the simulations (default: the one the results file records; needed "
        "for a bare list of simulations).",
    ),
    input: Path = typer.Option(
        ..., "--input", help="A results file or a JSON list of simulations."
    ),
    save_to: Path = typer.Option(..., "--save-to", help="Where to write the re-graded results."),
    data_dir: Path = typer.Option(
        None,
        "--data-dir",
        help="Benchmark data folder whose tasks grade the simulations (default $TAU2_DATA_DIR).",
    ),
    judge_llm: str = typer.Option(None, "--judge-llm", help=JUDGE_HELP),
    judge_llm_args: str = typer.Option(
        None, "--judge-llm-args", help="JSON arguments laid over the judge's default ones."
    ),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(
        None, "--server-token", envvar="TAU_SERVER_TOKEN", help="Bearer token for --server."
    ),
    max_concurrency: int = typer.Option(
        8, "--max-concurrency", min=1, help="Simulations replayed and graded at once."
    ),
    retrieval_config: str = typer.Option(
        None,
        "--retrieval-config",
        help="For a domain with retrieval configs: the config the episodes are rebuilt with "
        "(default: the one the results file records).",
    ),
    retrieval_config_kwargs: str = typer.Option(
        None, "--retrieval-config-kwargs", help=RETRIEVAL_KWARGS_HELP
    ),
    task_set_name: str = typer.Option(
        None,
        "--task-set-name",
        help=TASK_SET_HELP.removesuffix(".")
        + " (evaluate: else the one the results file records).",
    ),
) -> None:
    """Re-grade saved simulations by replaying their tool calls on fresh episodes."""
    from tau_mcp.conversation.reference_texts import reference_texts
    from tau_mcp.harness.evaluate import check_domain, recorded_domain, recorded_task_set, tasks_of
    from tau_mcp.harness.results import refuse_unfinished_run, write_regraded

    judge = judge_option(judge_llm, judge_llm_args)
    try:
        document = load_results(input)
        domain = domain or recorded_domain(document, input)
        check_domain(document, domain, input)
        task_set = task_set_name or recorded_task_set(document)
        loaded = load_domain(domain, data_dir, task_set=task_set)
        if judge is not None and needs_judge(tasks_of(loaded, document)):
            check_models([judge_use(judge.for_texts(reference_texts(loaded.data_dir)))])
        options = _evaluate_options(
            loaded, document, retrieval_config, retrieval_kwargs_option(retrieval_config_kwargs)
        )
        with results_lock(save_to):  # no run may write there meanwhile
            refuse_unfinished_run(save_to)
            graded = asyncio.run(
                _evaluate(loaded, document, judge, server, server_token, max_concurrency, options)
            )
            write_regraded(save_to, graded)
    except (EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(f"interrupted; nothing was written to {save_to}", err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    print_summary(console, graded["simulations"], f"{domain}: re-graded {input.name}")
    console.print(f"re-graded results saved to {save_to}")


def _evaluate_options(domain, document, config: str | None, kwargs: dict | None):
    """The episode options re-grading uses: the given retrieval config, else the one the results
    file's header records (a domain with retrieval configs must run one that works here)."""
    from tau_mcp.harness.backends import EpisodeOptions

    if domain.variants is None and config is None and kwargs is None:
        return None
    info = document.get("info") if isinstance(document, dict) else None
    info = info if isinstance(info, dict) else {}
    if config is None:
        config = info.get("retrieval_config")
        kwargs = kwargs if kwargs is not None else info.get("retrieval_config_kwargs")
    variant = domain.resolve_variant(config, kwargs)
    return EpisodeOptions(variant.name, dict(variant.kwargs) or None) if variant else None


async def _evaluate(
    domain, document, judge, server, token, concurrency, options=None
) -> dict[str, Any]:
    from tau_mcp.grading import Grader
    from tau_mcp.harness.evaluate import regrade

    backend = await open_backend(domain, server, token)
    try:
        grader = Grader(backend, domain, judge, options)
        return await regrade(backend, domain, grader, document, concurrency)
    finally:
        await backend.close()
