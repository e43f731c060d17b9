"""`tau-harness`: run simulations, re-grade saved ones, and look at results.

One module per command; this is the one place they are registered (`COMMANDS`: a command's
module is imported only when it runs or its help is shown). A new command is a module
here with a typer command function (or a typer sub-app), added to the list below. Helpers
every command shares (failing with one sentence, JSON options, domain, backend and judge
set-up) are public in `tau_mcp.harness.cli.common`.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn

import typer

from tau_mcp.conversation import collector
from tau_mcp.harness.cli.domain_path import domain_path_option
from tau_mcp.harness.cli.lazy import LazyCommand, LazyGroup

# The commands, in the order `--help` lists them: name, module (tau_mcp.harness.cli.*), attribute.
# The reference's names for what some of them do follow ours (docs/from-tau2.md).
_EXTRA_ARGS = {"allow_extra_args": True, "ignore_unknown_options": True}
COMMANDS = (
    # extra arguments: `--task-ids a b c` as the reference takes them, and its voice and log
    # options (tau_mcp.harness.cli.tau2_options sorts them out)
    LazyCommand("run", "tau_mcp.harness.cli.run", "run", {"context_settings": _EXTRA_ARGS}),
    LazyCommand("evaluate", "tau_mcp.harness.cli.evaluate", "evaluate"),
    LazyCommand("view", "tau_mcp.harness.cli.view", "view"),
    LazyCommand("report", "tau_mcp.harness.cli.report", "report"),
    LazyCommand("review", "tau_mcp.harness.cli.review", "review"),
    LazyCommand("play", "tau_mcp.harness.cli.play", "play"),
    LazyCommand("serve", "tau_mcp.harness.cli.serve", "serve"),
    LazyCommand("leaderboard", "tau_mcp.harness.cli.leaderboard", "leaderboard"),
    LazyCommand("convert-results", "tau_mcp.harness.cli.convert", "convert_results"),
    LazyCommand("presets", "tau_mcp.harness.cli.presets", "presets"),
    LazyCommand("domains", "tau_mcp.harness.cli.domains", "domains"),
    # `domain NAME` shows a domain; `domain check NAME` proves it; `domain new NAME` starts one
    # (tau_mcp.harness.cli.domain)
    LazyCommand("domain", "tau_mcp.harness.cli.domain", "domain_app"),
    LazyCommand("intro", "tau_mcp.harness.cli.tau2", "intro"),
    LazyCommand("evaluate-trajs", "tau_mcp.harness.cli.tau2", "evaluate_trajs"),
    LazyCommand(
        "check-data",
        "tau_mcp.harness.cli.data",
        "verify",
        {"help": "Check the data folder against the pinned reference release (= data verify)."},
    ),
    # every argument, --help included, goes to `tau-server serve`, whose options it takes
    LazyCommand(
        "start",
        "tau_mcp.harness.cli.tau2",
        "start",
        {"context_settings": {**_EXTRA_ARGS, "help_option_names": []}},
    ),
    # groups of commands
    LazyCommand("data", "tau_mcp.harness.cli.data", "data_app"),
    LazyCommand("export", "tau_mcp.harness.cli.export", "export_app"),
    LazyCommand("submit", "tau_mcp.harness.cli.submit", "submit_app"),
)


class HarnessGroup(LazyGroup):
    """tau-harness's commands: each command's module is imported when it is used."""

    lazy_commands = COMMANDS
    shared_options = (domain_path_option,)


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
    # Text from results files can hold a lone UTF-16 surrogate (a model's output can): the
    # console shows it as its escape, `\ud800`, instead of failing mid-table.
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="backslashreplace")


def main() -> None:  # pragma: no cover
    """The `tau-harness` program (and `python -m harness`)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.argv[1:] = bare_ray_flag(sys.argv[1:])
    collector.freeze_after_pauses()  # this process is ours (see conversation.collector)
    try:
        app()
    except SystemExit as done:
        exit_now(done.code)
    exit_now(0)


def exit_now(code: object) -> NoReturn:
    """Exit with `code` as `sys.exit` would, without tearing the interpreter down.

    Once a command is done, Python's finalization frees every object one by one: with litellm
    loaded (its thousands of classes and pydantic models) that is ~0.8 s of CPU spent after the
    command's last line, at the end of every run. The exit handlers still run (logging's
    flush, litellm's callbacks, temporary folders, Ray's shutdown) and the standard streams are
    flushed; only the teardown is skipped. With another thread still running, the normal exit
    (which waits for it) is kept."""
    if threading.active_count() > 1:
        sys.exit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message on stderr, status 1
        sys.stderr.write(f"{code}\n")
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written to it
            pass
    os._exit(status)


def bare_ray_flag(args: list[str]) -> list[str]:
    """`--ray` with no address (last, or followed by another option) means a local instance."""
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append("local")
    return out


__all__ = ["COMMANDS", "app", "bare_ray_flag", "exit_now", "main"]
