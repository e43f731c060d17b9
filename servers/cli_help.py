"""Help screens that show no type beside a plain on/off flag.

typer 0.2x's rich help prints `<bool>` next to every flag (`--show <bool>`), as if it took a
value. Every tau-server and tau-harness command group is a `PlainFlagsGroup`
(`typer.Typer(cls=PlainFlagsGroup)`): it clears the type label of the flags of itself and of
each command it hands out, the `--help` option included, before help is drawn. Flags still
parse as before; options that take a value keep their type.

It also gives each command it hands out a one-line summary for the group's command list: the
first paragraph of its help with the docstring's line breaks joined (typer's rich mode would
keep them, and the list would wrap at the source's line ends).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from typer.core import TyperGroup


def plain_flags(params: Iterable[Any]) -> None:
    """Give on/off flags an empty metavar, so no type is shown beside them."""
    for param in params:
        if getattr(param, "is_flag", False) and not getattr(param, "count", False):
            if getattr(param, "metavar", None) is None:
                param.metavar = ""


def summary_line(help_text: str) -> str:
    """A help text's first paragraph on one line."""
    return " ".join(inspect.cleandoc(help_text).split("\n\n", 1)[0].split())


class PlainFlagsGroup(TyperGroup):
    def get_params(self, ctx: Any) -> list[Any]:
        params = super().get_params(ctx)
        plain_flags(params)
        return params

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and command.short_help is None and command.help:
            command.short_help = summary_line(command.help)
        if command is not None and not isinstance(command, PlainFlagsGroup):
            plain_flags(command.params)
            help_option = command.get_help_option(ctx)  # made once and kept (typer 0.2x)
            if help_option is not None:
                plain_flags([help_option])
        return command
