"""Every command's help, of both programs: plain flags show no type, and every option of
`evaluate` says what it is for."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from tau_mcp.harness.cli import app as harness_app
from tau_mcp.servers.cli import app as server_app


def _command_paths(app: typer.Typer) -> list[list[str]]:
    """Every command and group below the program, as the words that reach it."""
    root = typer.main.get_command(app)
    paths: list[list[str]] = [[]]

    def walk(group, prefix: list[str]) -> None:
        ctx = typer.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            paths.append([*prefix, name])
            if hasattr(command, "list_commands"):
                walk(command, [*prefix, name])

    walk(root, [])
    return paths


@pytest.mark.parametrize("app", [harness_app, server_app], ids=["tau-harness", "tau-server"])
def test_no_command_shows_a_type_beside_a_plain_flag(app):
    runner = CliRunner()
    paths = _command_paths(app)
    assert len(paths) > 5
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "--help" in result.output
        assert "<bool>" not in result.output, (path, result.output)


def test_flags_still_parse_and_typed_options_keep_their_type():
    result = CliRunner().invoke(harness_app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "<int range>" in result.output and "<str>" in result.output
    result = CliRunner().invoke(harness_app, ["run", "--show"])
    assert result.exit_code != 0 and "--show goes with --preset NAME" in result.output


def test_every_evaluate_option_has_help():
    command = typer.main.get_command(harness_app)
    evaluate = command.get_command(typer.Context(command), "evaluate")
    bare = [p.opts[0] for p in evaluate.params if not getattr(p, "help", None)]
    assert bare == []


@pytest.mark.parametrize("app", [harness_app, server_app], ids=["tau-harness", "tau-server"])
def test_command_lists_show_each_summary_as_flowing_text(app):
    """A command's summary in its group's list is the first paragraph of its help, rewrapped to
    the terminal, not broken at the docstring's own line ends."""
    from tau_mcp.servers.cli_help import summary_line

    for path in _command_paths(app):
        result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400"})
        root = typer.main.get_command(app)
        group = root
        for word in path:
            group = group.get_command(typer.Context(group), word)
        if not hasattr(group, "list_commands"):
            continue
        ctx = typer.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            line = summary_line(command.help or "")
            # At 400 columns every summary fits on its row of the list, whole.
            assert line[:150] in result.output, (path, name, result.output)
