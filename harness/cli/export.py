"""`tau-harness export ...`: our tasks in other frameworks' dataset formats."""

from __future__ import annotations

from pathlib import Path

import typer

from tau_mcp.harness.cli.common import (
    DOMAIN_HELP,
    RETRIEVAL_KWARGS_HELP,
    fail,
    json_arg,
    load_domain,
    retrieval_kwargs_option,
)
from tau_mcp.servers.cli_help import PlainFlagsGroup
from tau_mcp.servers.engine.errors import EngineError

export_app = typer.Typer(
    cls=PlainFlagsGroup,
    help="Export tasks as other evaluation frameworks' datasets.",
    no_args_is_help=True,
)


@export_app.command("ep-rows")
def ep_rows_command(
    domain: str = typer.Option(..., "--domain", help=DOMAIN_HELP),
    split: str = typer.Option("base", "--split", help="Task split (ignored with --task-ids)."),
    task_ids: list[str] = typer.Option(
        None, "--task-ids", help="Task ids: space- or comma-separated, or repeat the option."
    ),
    user_llm: str = typer.Option(
        "gpt-4.1", "--user-llm", help="litellm model EP's simulated user runs on."
    ),
    user_llm_args: str = typer.Option(
        None,
        "--user-llm-args",
        help="JSON arguments for the user's model (keys and headers are left out of the rows: "
        "set the provider's key variable where Eval Protocol runs).",
    ),
    output: Path = typer.Option(..., "-o", "--output", help="JSONL file to write ('-': stdout)."),
    data_dir: Path = typer.Option(None, "--data-dir", help="Data folder (default $TAU2_DATA_DIR)."),
    retrieval_config: str = typer.Option(
        None,
        "--retrieval-config",
        help="For a domain with retrieval configs: the config the rows' sessions run (and whose "
        "policy they carry).",
    ),
    retrieval_kwargs: str = typer.Option(
        None, "--retrieval-config-kwargs", help=RETRIEVAL_KWARGS_HELP
    ),
) -> None:
    """Write Eval Protocol dataset rows (one per task) for `evaluation_test(input_dataset=...)`."""
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.harness.errors import ConfigError
    from tau_mcp.harness.integrations.ep_rows import ep_rows, to_jsonl
    from tau_mcp.harness.redaction import without_secrets
    from tau_mcp.harness.results import atomic_write

    try:
        # the run the rows describe, checked as any run's options are
        config = RunConfig(
            domain=domain,
            data_dir=data_dir,
            task_split=split,
            task_ids=task_ids,
            user_llm=user_llm,
            user_llm_args=json_arg("--user-llm-args", user_llm_args) or None,
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval_kwargs_option(retrieval_kwargs),
        )
        loaded = load_domain(domain, config.data_dir, ready="lazy")
        rows = ep_rows(
            loaded,
            config.task_split,
            config.task_ids,
            user_llm,
            without_secrets(config.user_llm_args),
            config.retrieval_config,
            config.retrieval_kwargs,
        )
    except (ConfigError, EngineError) as exc:
        fail(str(exc))
        return
    text = to_jsonl(rows)
    if str(output) == "-":
        typer.echo(text, nl=False)
        return
    atomic_write(output, text)
    typer.echo(f"{len(rows)} rows for {domain} written to {output}", err=True)
