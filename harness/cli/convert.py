"""`tau-harness convert-results`: a results file between our layout and the reference's `json`
and `dir` layouts (docs/leaderboard.md#convert-results)."""

from __future__ import annotations

from pathlib import Path

import typer

from tau_mcp.harness.cli.common import console, fail
from tau_mcp.harness.results import ResultsError
from tau_mcp.harness.results.folder import LayoutError
from tau_mcp.harness.results.layouts import LAYOUTS


def convert_results(
    path: Path = typer.Argument(
        ..., help="A results file, or a results folder (results.json + simulations/)."
    ),
    to: str = typer.Option(
        None,
        "--to",
        help="tau-mcp, json or dir (default: a folder becomes json, a file becomes dir).",
    ),
    output: Path = typer.Option(
        None, "-o", "--output", help="Write here instead of converting in place."
    ),
    no_backup: bool = typer.Option(
        False, "--no-backup", help="In place: keep no .bak copy of what is replaced."
    ),
) -> None:
    """Convert a results file between our layout and the reference's json and dir layouts."""
    from tau_mcp.harness.results.convert import convert

    if to is not None and to not in LAYOUTS:
        fail(f"unknown layout {to!r} (one of {', '.join(LAYOUTS)})")
    try:
        done = convert(path, to, output, backup=not no_backup)  # type: ignore[arg-type]
    except (LayoutError, ResultsError) as exc:
        fail(str(exc))
        return
    except OSError as exc:
        fail(f"cannot write the converted results ({exc.strerror or exc})")
        return
    if done is None:
        console.print(f"{path} is in the {to} layout already; nothing to do")
        return
    for backup in done.backups:
        console.print(f"backup: {backup}")
    console.print(
        f"converted {path} ({done.source}) to {done.target}: {done.written}, "
        f"{done.simulations} simulation(s)"
    )
