"""Commands whose module is imported only when the command is used.

`tau-harness run` should not pay for importing `submit`, `leaderboard`, `review`, `serve`...:
together their modules (and what they import) cost ~0.1 s of CPU at every start. The program's
group lists every command by name (`LazyCommand`); a command's module is imported, and its
click command built the way typer builds it, when click asks for that command: to run it, or
to show help (`tau-harness --help` asks for every command, for their one-line help).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import typer
from typer.core import TyperGroup
from typer.main import get_group

from tau_mcp.conversation import collector
from tau_mcp.servers.cli_help import PlainFlagsGroup


@dataclass(frozen=True)
class LazyCommand:
    """`name` runs `module:attribute`: a typer command function, or a typer sub-app (a group
    of commands). `settings` are what `Typer.command()` takes (help, context_settings...)."""

    name: str
    module: str
    attribute: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        """The click command, made by typer from the imported function or sub-app."""
        with collector.paused():  # modules live as long as the process
            target = getattr(importlib.import_module(self.module), self.attribute)
        holder = typer.Typer()
        if isinstance(target, typer.Typer):
            holder.add_typer(target, name=self.name)
        else:
            holder.command(self.name, **self.settings)(target)
        return get_group(holder).commands[self.name]


class _Commands(MutableMapping[str, Any]):
    """A group's commands: built ones, and lazy ones built on first lookup, in listing order."""

    def __init__(
        self,
        built: MutableMapping[str, Any],
        lazy: tuple[LazyCommand, ...],
        prepare: Callable[[Any], None],
    ) -> None:
        self._built = built
        self._lazy = {command.name: command for command in lazy}
        self._prepare = prepare

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            spec = self._lazy[name]  # KeyError for an unknown command, as a dict would raise
            command = spec.build()
            self._prepare(command)
            self._built[name] = command
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._lazy.pop(name, None)
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        yield from self._built
        yield from (name for name in self._lazy if name not in self._built)

    def __len__(self) -> int:
        return len(set(self._built) | set(self._lazy))

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._lazy


#: Makes an option (a typer click parameter) for one command.
OptionMaker = Callable[[], Any]


class LazyGroup(PlainFlagsGroup):
    """A `PlainFlagsGroup` whose subclass names its commands in `lazy_commands`; they are
    listed in that order (after any registered on the Typer app itself). Every command it
    hands out, and every command of its sub-groups, also takes the options `shared_options`
    make (`--domain-path`, which every tau-harness command takes)."""

    lazy_commands: tuple[LazyCommand, ...] = ()
    shared_options: tuple[OptionMaker, ...] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands, self.lazy_commands, self._share)

    def _share(self, command: Any) -> None:
        share_options(command, self.shared_options)


def share_options(command: Any, makers: tuple[OptionMaker, ...]) -> None:
    """Add the options `makers` make to a command, or to every command of a group (a lazy
    group adds them to each command as it builds it)."""
    if not makers:
        return
    if isinstance(command, LazyGroup):
        command.shared_options = makers
    elif isinstance(command, TyperGroup):
        for sub in command.commands.values():
            share_options(sub, makers)
    else:
        taken = {name for param in command.params for name in param.opts}
        for make in makers:
            option = make()
            if not taken.intersection(option.opts):
                command.params.append(option)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: nothing is imported to list them
