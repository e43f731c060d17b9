"""`tau-harness`: run simulations, re-grade saved ones, and look at results.

One module per command; this is the one place they are registered (`COMMANDS`: a command's
module is imported only when it runs or its help is shown). A new command is a module
here with a typer command function (or a typer sub-app), added to the list below. Helpers
every command shares (failing with one sentence, JSON options, domain, backend and judge
set-up) are public in `harness.cli.common`.
"""

from __future__ import annotations

import os
import sys

import typer

from harness.cli.lazy import LazyCommand, LazyGroup

# The commands, in the order `--help` lists them: name, module (harness.cli.*), attribute.
# The reference's names for what some of them do follow ours (docs/from-tau2.md).
_EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}
COMMANDS = (
    # extra arguments: `--task-ids a b c` as the reference takes them, and its voice and log
    # options (harness.cli.tau2_options sorts them out)
    LazyCommand("run", "harness.cli.run", "run", {"context_settings": _EXTRA_ARGS}),
    LazyCommand("evaluate", "harness.cli.evaluate", "evaluate"),
    LazyCommand("view", "harness.cli.view", "view"),
    LazyCommand("report", "harness.cli.report", "report"),
    LazyCommand("review", "harness.cli.review", "review"),
    LazyCommand("play", "harness.cli.play", "play"),
    LazyCommand("serve", "harness.cli.serve", "serve"),
    LazyCommand("leaderboard", "harness.cli.leaderboard", "leaderboard"),
    LazyCommand("convert-results", "harness.cli.convert", "convert_results"),
    LazyCommand("presets", "harness.cli.presets", "presets"),
    LazyCommand("domain", "harness.cli.tau2", "domain_doc"),
    LazyCommand("intro", "harness.cli.tau2", "intro"),
    LazyCommand("evaluate-trajs", "harness.cli.tau2", "evaluate_trajs"),
    LazyCommand(
        "check-data",
        "harness.cli.data",
        "verify",
        {"help": "Check the data folder against the pinned reference release (= data verify)."},
    ),
    LazyCommand("start", "harness.cli.tau2", "start", {"context_settings": _EXTRA_ARGS}),
    # groups of commands
    LazyCommand("data", "harness.cli.data", "data_app"),
    LazyCommand("export", "harness.cli.export", "export_app"),
    LazyCommand("submit", "harness.cli.submit", "submit_app"),
)


class HarnessGroup(LazyGroup):
    """tau-harness's commands: each command's module is imported when it is used."""

    lazy_commands = COMMANDS


app = typer.Typer(
    cls=HarnessGroup,
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


__all__ = ["COMMANDS", "app", "bare_ray_flag", "main"]
