"""`tau-harness data ...`: get and check the reference benchmark data."""

from __future__ import annotations

from pathlib import Path

import typer

from tau_mcp.harness.reference_texts.build import find_python, generate_reference_texts
from tau_mcp.servers.cli_help import PlainFlagsGroup
from tau_mcp.servers.engine.data import default_cache_dir, is_demo, load_pins, resolve_data_dir
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.pins import fetch_reference, verify_data_dir

data_app = typer.Typer(
    cls=PlainFlagsGroup, help="Get and check the reference benchmark data.", no_args_is_help=True
)


@data_app.command("fetch")
def fetch(
    dest: Path = typer.Option(
        None, "--dest", help="Where to put the data (default: the user cache)."
    ),
    timeout: float = typer.Option(30.0, help="Seconds to wait for the download."),
    python: str = typer.Option(
        None,
        "--python",
        help="Python 3.12/3.13 to run the reference release with when generating its texts "
        "(default: $TAU_REFERENCE_PYTHON, this Python, or python3.13/python3.12 on PATH).",
    ),
    texts: bool = typer.Option(
        True,
        "--texts/--no-texts",
        help="Also generate tau2/reference_texts/ (what the reference shows a model) by running "
        "the release in a throwaway virtualenv; without them runs use tau-mcp's own prompts.",
    ),
    taubench: bool = typer.Option(
        False,
        "--taubench",
        help="Fetch the pinned original τ-bench release instead (its data, tasks, tools and "
        "prompts, exported by running its code; default place: the user cache, which the "
        "τ-bench domains use when TAUBENCH_DATA_DIR is unset).",
    ),
) -> None:
    """Download the pinned reference release's data, generate its reference texts, and verify
    every file against the pins (with --taubench: the original τ-bench's)."""
    if taubench:
        _fetch_taubench(dest, timeout)
        return
    try:
        pins = load_pins()
        target = dest or default_cache_dir(pins)
        generate = None
        if texts:
            interpreter = find_python(pins, python)

            def generate(payload, staging, pins):
                typer.echo(
                    f"generating reference texts with {interpreter} (takes a few minutes) ..."
                )
                generate_reference_texts(payload, staging, pins, python=interpreter)

        typer.echo(f"fetching {pins['release']} data into {target} ...")
        folder = fetch_reference(target, timeout=timeout, generate=generate)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"ok: {folder} (used automatically when TAU2_DATA_DIR is unset)")


def _fetch_taubench(dest: Path | None, timeout: float) -> None:
    from tau_mcp.harness.reference_texts.taubench import fetch_taubench, load_taubench_pins

    try:
        pins = load_taubench_pins()
        typer.echo(f"fetching {pins['reference']} and exporting its data ...")
        folder = fetch_taubench(dest, timeout=timeout)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"ok: {folder} (used automatically when TAUBENCH_DATA_DIR is unset)")


@data_app.command("verify")
def verify(
    data_dir: str = typer.Option(None, "--data-dir", help="Data folder (default: TAU2_DATA_DIR)."),
    taubench: bool = typer.Option(
        False, "--taubench", help="Check the original τ-bench's data folder instead."
    ),
    taubench_data_dir: Path = typer.Option(
        None,
        "--taubench-data-dir",
        help="With --taubench: the folder (default: TAUBENCH_DATA_DIR, else the fetched one).",
    ),
) -> None:
    """Check a data folder against the pinned reference release (with --taubench: the
    original τ-bench's)."""
    if taubench or taubench_data_dir is not None:
        _verify_taubench(taubench_data_dir)
        return
    try:
        folder = resolve_data_dir(data_dir)
        if is_demo(folder):
            raise DataError(
                "no reference data is configured (only tau-mcp's own demo set, which is not the "
                "reference's); get it with `tau-harness data fetch`, or point --data-dir or "
                "TAU2_DATA_DIR at a copy"
            )
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


def _verify_taubench(folder: Path | None) -> None:
    from tau_mcp.harness.reference_texts.taubench import verify_taubench_dir
    from tau_mcp.servers.domains.tau_bench.spec import LOCATION

    try:
        root = Path(folder) if folder is not None else LOCATION.root(Path("."))
        if not root.is_dir():
            raise DataError(f"{root} is not a folder")
        result = verify_taubench_dir(root)
    except DataError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    for problem in result.problems:
        typer.echo(f"  {problem}", err=True)
    if not result.ok:
        typer.echo(
            f"error: {len(result.problems)} of {result.checked} files in {root} differ from "
            "the pinned τ-bench release",
            err=True,
        )
        raise typer.Exit(1)
    typer.echo(f"ok: {root} matches the pinned τ-bench release ({result.checked} files)")
