"""`tau-harness domains`: every domain this install knows, tau-mcp's own and the packs'."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from tau_mcp.harness.cli.common import console, fail

FORMATS = ("table", "json")


def _short(origin: str) -> str:
    """Where a domain comes from, for a table cell ("installed acme-domain 0.1.0")."""
    return origin.replace("the installed distribution ", "installed ").replace(
        "the pack folder ", "folder "
    )


def domains(
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    fmt: str = typer.Option("table", "--format", help="table or json."),
) -> None:
    """Every domain: tau-mcp's own, installed packs' and those of the pack folders
    --domain-path and $TAU_DOMAIN_PATH name; where each comes from and where its data is. A
    pack that is refused (its name is taken) or fails to load is said in one sentence, and the
    command then exits 1; the other domains are listed as usual."""
    from tau_mcp.servers.domains import registry
    from tau_mcp.servers.engine.errors import EngineError

    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r} (table or json)")
    try:
        found = registry.statuses(data_dir)
    except EngineError as exc:
        fail(str(exc))
    problems = registry.problems() + [s.problem for s in found if s.problem]
    if fmt == "json":
        rows = [
            {
                "name": s.name,
                "from": s.origin,
                "builtin": s.builtin,
                "data": str(s.folder) if s.folder else None,
                "no_data": s.no_data,
                "problem": s.problem,
            }
            for s in found
        ]
        typer.echo(json.dumps({"domains": rows, "problems": problems}, indent=2))
    else:
        from rich.table import Table

        table = Table(show_header=True, header_style="bold")
        for column in ("domain", "from", "data"):
            table.add_column(column, overflow="fold")
        for s in found:
            if s.folder is not None:
                data = str(s.folder)
            else:
                data = "[red]fails to load[/]" if s.problem else "[dim]no data here[/]"
            table.add_row(s.name, _short(s.origin), data)
        console.print(table)
        for problem in problems:
            typer.echo(f"error: {problem}", err=True)
    if problems:
        raise typer.Exit(1)
