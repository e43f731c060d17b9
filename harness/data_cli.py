"""`tau-harness data ...`: get and check the reference benchmark data."""

from __future__ import annotations

from pathlib import Path

import typer

from servers.engine.data import resolve_data_dir
from servers.engine.errors import DataError
from servers.engine.pins import default_cache_dir, fetch_reference, load_pins, verify_data_dir

data_app = typer.Typer(help="Get and check the reference benchmark data.", no_args_is_help=True)


@data_app.command("fetch")
def fetch(
    dest: Path = typer.Option(
        None, "--dest", help="Where to put the data (default: the user cache)."
    ),
    timeout: float = typer.Option(30.0, help="Seconds to wait for the download."),
) -> None:
    """Download the pinned reference release's data and verify every file against the pins."""
    target = dest or default_cache_dir()
    typer.echo(f"fetching {load_pins()['release']} data into {target} ...")
    try:
        folder = fetch_reference(target, timeout=timeout)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"ok: {folder} (used automatically when TAU2_DATA_DIR is unset)")


@data_app.command("verify")
def verify(
    data_dir: str = typer.Option(None, "--data-dir", help="Data folder (default: TAU2_DATA_DIR)."),
) -> None:
    """Check a data folder against the pinned reference release."""
    try:
        folder = resolve_data_dir(data_dir)
        result = verify_data_dir(folder)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    for problem in result.problems:
        typer.echo(f"  {problem}", err=True)
    if not result.ok:
        typer.echo(
            f"{folder}: {len(result.problems)} of {result.checked} pinned files fail", err=True
        )
        raise typer.Exit(1)
    typer.echo(f"{folder}: all {result.checked} pinned files match")
