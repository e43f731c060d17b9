"""`tau-harness domain check NAME`: prove a domain before anyone runs a model on it
(tau_mcp.harness.domain_check; docs/domain-check.md)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import typer

from tau_mcp.harness.cli.common import DOMAIN_HELP, TASK_SET_HELP, console, fail, judge_option

FORMATS = ("table", "json")


def check(
    name: str = typer.Argument(..., help=DOMAIN_HELP),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    task_set: str = typer.Option(None, "--task-set-name", help=TASK_SET_HELP),
    retrieval_config: str = typer.Option(
        None,
        "--retrieval-config",
        help="For a domain with retrieval configs: the config episodes are set up with "
        "(default: the config the domain's own toolkit is; every config's tool listing is "
        "checked).",
    ),
    judge_llm: str = typer.Option(
        "none",
        "--judge-llm",
        help="Model judging NL assertions when an idle agent's empty trajectory is graded "
        "(default none: NL assertions are not judged, and a warning says where they count).",
    ),
    judge_llm_args: str = typer.Option(
        None, "--judge-llm-args", help="JSON arguments for the judge model."
    ),
    fmt: str = typer.Option("table", "--format", help="table or json."),
    max_concurrency: int = typer.Option(
        32, "--max-concurrency", min=1, help="Simulations and gradings in flight at once."
    ),
) -> None:
    """Prove a domain before anyone runs a model on it: its data loads and validates, its tools
    are described, typed and listed as valid JSON Schema, its tasks name only what exists, every
    gold action runs without an error and twice gives the same state, the oracle agent with the
    scripted user scores 1.0 on every task, and doing nothing scores 0; warnings for what is
    legal but suspicious. Prints a table of findings (or JSON) and exits 1 on any error."""
    from tau_mcp.harness.domain_check.checker import CheckOptions, check_domain
    from tau_mcp.harness.domain_check.render import as_json, print_table
    from tau_mcp.harness.errors import ConfigError, InfrastructureError
    from tau_mcp.harness.wiring import load_domain
    from tau_mcp.servers.engine.errors import EngineError

    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r} (table or json)")
    options = CheckOptions(
        retrieval_config, judge_option(judge_llm, judge_llm_args), max_concurrency
    )
    status = console.status("", spinner="dots") if fmt == "table" else None
    try:
        domain = load_domain(name, data_dir, ready="lazy", task_set=task_set)
        if status is not None:
            with status:
                report = asyncio.run(
                    check_domain(
                        domain, options, lambda stage: status.update(f"checking {name}: {stage}")
                    )
                )
        else:
            report = asyncio.run(check_domain(domain, options))
    except (EngineError, ConfigError, InfrastructureError, ValueError) as exc:
        fail(str(exc))
    if fmt == "json":
        sys.stdout.write(as_json(report) + "\n")
    else:
        print_table(report, console)
    raise typer.Exit(report.exit_code)
