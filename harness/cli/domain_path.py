"""`--domain-path DIR`, which every tau-harness command takes: pack folders to find domains in.

A domain pack installed with pip needs no option; a pack's folder that is not installed is
given with `--domain-path DIR` (repeatable) or `$TAU_DOMAIN_PATH` (docs/own-domain.md). The
option is handled before the command runs, and reaches the processes the command starts (worker
processes, Ray actors, agent programs, servers) through `$TAU_DOMAIN_PATH`.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import typer
from typer.main import get_command

HELP = (
    "A domain pack's folder, or a folder of packs, to find domains in (repeatable; also "
    "$TAU_DOMAIN_PATH). Installed packs need none."
)


def _use(value: list[Path] | None) -> None:
    if value:
        from tau_mcp.servers.domains.registry import add_domain_paths

        add_domain_paths(value)


def _carrier(
    domain_path: list[Path] = typer.Option(
        None,
        "--domain-path",
        metavar="DIR",
        exists=True,
        file_okay=False,
        is_eager=True,
        expose_value=False,
        callback=_use,
        help=HELP,
    ),
) -> None:
    """Holds the option, for typer to build."""


@lru_cache(maxsize=1)
def domain_path_option() -> Any:
    """The option, built by typer as it builds every other (one object, shared by commands)."""
    holder = typer.Typer(add_completion=False)
    holder.command("carrier")(_carrier)
    return next(p for p in get_command(holder).params if "--domain-path" in p.opts)


__all__ = ["domain_path_option"]
