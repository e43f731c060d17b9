"""Results files in the reference's layout, written atomically so a killed run loses nothing.

Each finished simulation is serialized once; every save writes the whole file to a temporary
sibling and renames it over the old one, so readers only ever see a complete file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harness.messages import now


class ResultsError(ValueError):
    pass


def load_results(path: Path) -> dict[str, Any]:
    """A results file, or a bare list of simulations wrapped as one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultsError(f"cannot read results file {path}: {exc}") from None
    if isinstance(data, list):
        return {"info": None, "tasks": [], "simulations": data}
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list):
        raise ResultsError(f"{path} is neither a results file nor a list of simulations")
    return data


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultsFile:
    """A results document being built: header once, simulations appended as they finish."""

    def __init__(
        self, path: Path | None, info: dict[str, Any], tasks: list[dict[str, Any]]
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.header = {"timestamp": now(), "info": info, "tasks": tasks}
        self.simulations: list[dict[str, Any]] = []
        self._serialized: list[str] = []

    def add(self, simulation: dict[str, Any], save: bool = True) -> None:
        self.simulations.append(simulation)
        self._serialized.append(json.dumps(simulation, indent=1, default=str))
        if save:
            self.save()

    def text(self) -> str:
        head = json.dumps(self.header, indent=1, default=str)
        body = ",\n".join(self._serialized)
        return (
            f'{head[:-2]},\n "simulations": [\n{body}\n ]\n}}\n' if head.endswith("\n}") else head
        )

    def save(self) -> None:
        if self.path is not None:
            atomic_write(self.path, self.text())

    def document(self) -> dict[str, Any]:
        return {**self.header, "simulations": self.simulations}
