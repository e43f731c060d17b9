"""Reading results from disk: the reference's folder layout (`results.json` beside
`simulations/`) as one document, and a single JSON file. Both the results reader
(`tau_mcp.harness.results.load`) and the layout converter (`tau_mcp.harness.results.layouts`)
read through here; see the latter for the three layouts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SIMULATIONS_DIR = "simulations"
META_FILE = "results.json"
INDEX_KEY = "simulation_index"


class LayoutError(ValueError):
    """A results file or folder that cannot be read or written in the asked layout."""


def dir_paths(path: Path) -> tuple[Path, Path] | None:
    """(results.json, simulations/) when `path` is a results folder or the results.json of one;
    None for a plain results file."""
    path = Path(path)
    if path.is_dir():
        return path / META_FILE, path / SIMULATIONS_DIR
    sims = path.parent / SIMULATIONS_DIR
    if path.is_file() and sims.is_dir() and not _has_simulations_key(path):
        return path, sims
    return None


def _has_simulations_key(path: Path) -> bool:
    """Does the file hold its simulations itself? A folder's results.json does not."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return True  # not a folder's metadata: let the single-file reader say what is wrong
    return not isinstance(data, dict) or "simulations" in data


def read_json_text(path: Path) -> tuple[Any, str]:
    """A JSON file of a results file or folder, and its text (searched for keys before
    anything is walked); one sentence when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        return json.loads(text), text
    except FileNotFoundError:
        raise LayoutError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LayoutError(f"cannot read {path} ({exc})") from None


def read_json(path: Path) -> Any:
    return read_json_text(path)[0]


def read_dir(path: Path) -> dict[str, Any]:
    """A results folder as one document: the metadata with its simulations in place (in the
    index's order when the index names exactly the files present, else in file-name order)."""
    paths = dir_paths(path)
    if paths is None:
        raise LayoutError(f"{path} is not a results folder (no {SIMULATIONS_DIR}/ beside it)")
    meta_path, sims_dir = paths
    meta = read_json(meta_path)
    if not isinstance(meta, dict):
        raise LayoutError(f"{meta_path} is not a results folder's metadata (a JSON object)")
    files = {f.stem: f for f in sorted(sims_dir.glob("*.json"))}
    index = meta.get(INDEX_KEY)
    order = list(files)
    if isinstance(index, list):
        indexed = [str(e.get("id")) for e in index if isinstance(e, dict)]
        missing = sorted(set(indexed) - set(files))
        extra = sorted(set(files) - set(indexed))
        if missing or extra:
            parts = [f"{len(missing)} indexed simulation(s) missing"] if missing else []
            parts += [f"{len(extra)} file(s) not in the index"] if extra else []
            raise LayoutError(
                f"{meta_path}'s simulation index does not match {sims_dir} ({'; '.join(parts)})"
            )
        order = indexed
    simulations = []
    for sim_id in order:
        sim = read_json(files[sim_id])
        if not isinstance(sim, dict):
            raise LayoutError(f"{files[sim_id]} is not a simulation (a JSON object)")
        simulations.append(sim)
    return _with_simulations(meta, simulations)


def _with_simulations(meta: dict[str, Any], simulations: list[Any]) -> dict[str, Any]:
    """The metadata with `simulations` placed where the reference's order puts it."""
    document: dict[str, Any] = {}
    for key, value in meta.items():
        if key == INDEX_KEY and "simulations" not in document:
            document["simulations"] = simulations
        document[key] = value
    document.setdefault("simulations", simulations)
    return document
