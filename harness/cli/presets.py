"""`tau-harness presets`: the run presets (`run --preset NAME`), listed or shown one by one."""

from __future__ import annotations

import typer

from tau_mcp.harness.cli.common import console, fail


def presets(
    name: str = typer.Argument(None, help="A preset to show (default: list them all)."),
) -> None:
    """List the run presets (`tau-harness run --preset NAME`), or show what one sets."""
    from rich.table import Table

    from tau_mcp.harness import presets as store

    try:
        chosen = [store.load(name)] if name else store.available()
    except store.PresetError as exc:
        fail(str(exc))
        return
    if name is None:
        table = Table(show_header=True, header_style="bold")
        for column in ("preset", "description", "file"):
            table.add_column(column)
        for preset in chosen:
            where = "built-in" if preset.builtin else str(preset.path)
            table.add_row(preset.name, preset.description, where)
        console.print(table)
        console.print(f"your own presets go in {store.user_dir()} (NAME.toml)", style="dim")
        return
    print_preset(chosen[0])


def print_preset(preset, overridden: list[str] | None = None, flags=None) -> None:
    """The preset's options as `run` takes them (`flags`: the run command's, name -> flag; read
    from the command when not given)."""
    from rich.table import Table

    from tau_mcp.harness import presets as store

    if flags is None:
        import typer

        from tau_mcp.harness.cli import app

        flags = store.run_flags(typer.main.get_command(app).commands["run"].params)
    table = Table(title=f"preset {preset.name}: {preset.description}", show_header=True)
    table.add_column("option")
    table.add_column("value")
    for name, flag, value in store.describe(preset, flags):
        note = " (given on the command line instead)" if name in (overridden or []) else ""
        table.add_row(flag, value + note)
    console.print(table)
