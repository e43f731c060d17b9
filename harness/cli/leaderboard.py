"""`tau-harness leaderboard`: rank folders of submissions by a pass^k or cost (docs/leaderboard.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from tau_mcp.harness.cli.common import console, fail
from tau_mcp.harness.leaderboard.schema import SUBMISSIONS_PATH
from tau_mcp.servers.engine.errors import EngineError


def leaderboard(
    folders: list[Path] = typer.Argument(
        None,
        help="Submission folders, or folders of them (default: the data folder's published "
        "submissions).",
    ),
    domain: str = typer.Option(
        None,
        "-d",
        "--domain",
        help="One of the board's domains (the schema's, in the data folder; default: overall).",
    ),
    metric: str = typer.Option(
        "pass_1", "-m", "--metric", help="pass_1, pass_2, pass_3, pass_4 or cost."
    ),
    limit: int = typer.Option(None, "-n", "--limit", min=1, help="Show the first N rows."),
    fmt: str = typer.Option("table", "--format", help="table, md or json."),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
) -> None:
    """Rank submissions by a pass^k or cost, overall (mean over domains) or in one domain."""
    from tau_mcp.harness.leaderboard import board
    from tau_mcp.servers.engine.data import resolve_data_dir

    if fmt not in ("table", "md", "json"):
        fail(f"unknown format {fmt!r} (table, md or json)")
    try:
        if not folders:
            folders = [resolve_data_dir(data_dir) / SUBMISSIONS_PATH]
            if not folders[0].is_dir():
                fail(
                    f"no published submissions at {folders[0]}; give submission folders or "
                    "point --data-dir at the reference data"
                )
        entries, warnings = board.load_entries(folders)
        domains = board.board_domains(entries, data_dir)
        rows = board.rank(entries, metric, domain, domains)
    except (board.BoardError, EngineError) as exc:
        fail(str(exc))
        return
    for warning in warnings:
        typer.echo(f"warning: {warning}", err=True)
    shown = rows[:limit] if limit else rows
    if fmt == "md":
        sys.stdout.write(board.as_markdown(shown, domain, metric, domains))
    elif fmt == "json":
        sys.stdout.write(board.as_json(shown, domain, metric))
    else:
        console.print()
        console.print(board.as_table(shown, domain, metric, len(entries), domains))
        console.print()
        console.print(f"Total submissions: {len(entries)}", style="dim")
