"""`tau-harness`: run simulations, re-grade saved ones, and look at results.

One module per command; this is the one place they are registered. A new command is a module
here with a typer command function (or a typer sub-app), added to the list below. Helpers
every command shares (failing with one sentence, JSON options, domain, backend and judge
set-up) are public in `harness.cli.common`.
"""

from __future__ import annotations

import os
import sys

import typer

from harness.cli import (
    convert,
    data,
    evaluate,
    export,
    leaderboard,
    play,
    presets,
    report,
    review,
    run,
    serve,
    submit,
    tau2,
    view,
)
from servers.cli_help import PlainFlagsGroup

app = typer.Typer(
    cls=PlainFlagsGroup,
    help="Run and grade tau2 simulations against tau-mcp servers.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # a crash report must not print model args (keys)
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"tau-harness {version('tau-mcp')}")
        except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
            typer.echo("tau-harness (tau-mcp, not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Run and grade tau2 simulations against tau-mcp servers."""


# --- the commands, in the order `--help` lists them -------------------------------------------
app.command(context_settings=run.CONTEXT_SETTINGS)(run.run)
app.command()(evaluate.evaluate)
app.command()(view.view)
app.command()(report.report)
app.command()(review.review)
app.command()(play.play)
app.command()(serve.serve)
app.add_typer(data.data_app, name="data")
app.add_typer(export.export_app, name="export")
app.add_typer(submit.submit_app, name="submit")
app.command()(leaderboard.leaderboard)
app.command("convert-results")(convert.convert_results)
app.command()(presets.presets)
app.command("domain")(tau2.domain_doc)
app.command()(tau2.intro)
# The reference's names for what the commands above do (docs/from-tau2.md).
app.command("evaluate-trajs")(tau2.evaluate_trajs)
app.command(
    "check-data", help="Check the data folder against the pinned reference release (= data verify)."
)(data.verify)
app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(tau2.start)


def main() -> None:  # pragma: no cover
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.argv[1:] = bare_ray_flag(sys.argv[1:])
    app()


def bare_ray_flag(args: list[str]) -> list[str]:
    """`--ray` with no address (last, or followed by another option) means a local instance."""
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append("local")
    return out


__all__ = ["app", "bare_ray_flag", "main"]
