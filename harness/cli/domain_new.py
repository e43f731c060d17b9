"""`tau-harness domain new NAME [--dir DIR]`: write a small working domain pack to start from."""

from __future__ import annotations

from pathlib import Path

import typer

from tau_mcp.harness.cli.common import console, fail


def new(
    name: str = typer.Argument(
        ..., help="The new domain's name: a letter, then letters, digits, '-' or '_'."
    ),
    folder: Path = typer.Option(
        None, "--dir", help="Where to write the pack: a new or empty folder (default: ./NAME)."
    ),
) -> None:
    """Write a small working domain pack: packaging (pyproject.toml with the entry point), the
    spec, records, agent tools, one user tool, a policy, three tasks with gold actions (one
    read-only, one write, one needing the user's side) and a README that says what to edit.
    Install it with `pip install -e DIR`, then `tau-harness domain check NAME`."""
    from tau_mcp.harness.scaffold.pack import ScaffoldError, write_pack

    target = folder if folder is not None else Path.cwd() / name
    try:
        written = write_pack(name, target)
    except ScaffoldError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot write the pack to {target}: {exc.strerror or exc}")
    root = target.expanduser().resolve()
    console.print(f"Wrote the domain pack '{name}' to {root} ({len(written)} files):")
    for path in written:
        console.print(f"  {path.relative_to(root)}", markup=False, highlight=False)
    console.print(
        "\nNext:\n"
        f"  pip install -e {root}\n"
        f"  tau-harness domain check {name}\n"
        f"  tau-harness run --domain {name} --agent oracle --user scripted\n"
        f"(or, without installing, add --domain-path {root}). What to edit: {root / 'README.md'}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
