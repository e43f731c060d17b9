"""`tau-harness domain`: one command, several actions on a domain.

`domain NAME` shows a domain (its tasks, each side's tools, its policy: the reference's `tau2
domain`), `domain check NAME` proves it before anyone runs a model on it, `domain new NAME`
writes a pack to start a domain of one's own from. The first argument
picks the action when it names one (`DOMAIN_ACTIONS`), else it is a domain's name and the
domain is shown; so no domain may be named like an action (`RESERVED_NAMES`). An action is one
row of the table below, its command a module imported only when it runs or its help is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import typer

from tau_mcp.harness.cli.lazy import LazyCommand, LazyGroup

#: The action that runs when the first argument names no action.
SHOW = "show"


@dataclass(frozen=True)
class DomainAction:
    """One action of `tau-harness domain`: how it is written, what it does, its command."""

    usage: str
    summary: str
    command: LazyCommand


DOMAIN_ACTIONS = (
    DomainAction(
        "domain NAME",
        "show a domain: its tasks, each side's tools with their parameters, its policy",
        LazyCommand(SHOW, "tau_mcp.harness.cli.tau2", "domain_doc"),
    ),
    DomainAction(
        "domain check NAME",
        "prove a domain: its data, tools, tasks and gold plans, an oracle run of every task; "
        "a table of findings, exit 1 on any error",
        LazyCommand("check", "tau_mcp.harness.cli.domain_check", "check"),
    ),
    DomainAction(
        "domain new NAME [--dir DIR]",
        "write a small working domain pack to start your own domain from (docs/own-domain.md)",
        LazyCommand("new", "tau_mcp.harness.cli.domain_new", "new"),
    ),
)

#: Words the first argument reserves for actions: no domain may be named so (the registry
#: refuses a pack named so: `tau_mcp.servers.domains.discovery.RESERVED_NAMES` holds these).
RESERVED_NAMES = frozenset(action.command.name for action in DOMAIN_ACTIONS)


def _help() -> str:
    width = max(len(action.usage) for action in DOMAIN_ACTIONS)
    lines = [f"  {a.usage.ljust(width)}  {a.summary}" for a in DOMAIN_ACTIONS]
    # "\b" keeps click from rewrapping the block of usages.
    return (
        "Show a domain, check it before running a model on it, or start a new one.\n\n\b\n"
        + "\n".join(lines)
        + f"\n\nA first argument that names no action ({', '.join(sorted(RESERVED_NAMES))}) "
        "is a domain's name: `domain NAME` is `domain show NAME`. Each action takes --help."
    )


class DomainGroup(LazyGroup):
    """The actions, imported lazily; a first argument naming none of them is a domain to show."""

    lazy_commands = tuple(action.command for action in DOMAIN_ACTIONS)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = [SHOW, *args]
        return super().resolve_command(ctx, args)


domain_app = typer.Typer(cls=DomainGroup, help=_help(), no_args_is_help=True)
