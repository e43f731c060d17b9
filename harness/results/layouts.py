"""The three layouts of a results file on disk, read and written without losing a byte.

- `tau-mcp`: ours: one JSON file, the header indented by one space and each simulation
  serialized on its own (so a run appends one without rewriting the others), non-ASCII text
  escaped. A run's `ResultsFile` and every whole-document writer (`evaluate`, `review`,
  `convert-results`) use this module's writer, so they write the same bytes.
- `json`: the reference's single file, as `tau2 run` writes it: two-space indent, non-ASCII
  escaped, top-level keys in the reference's order (timestamp, info, tasks, simulations,
  simulation_index, then any others).
- `dir`: the reference's folder: `results.json` (everything but the simulations, plus a
  `simulation_index` summarizing them) and `simulations/<simulation id>.json`, one file per
  simulation, written as the reference's pydantic writer does (two-space indent, UTF-8 text,
  shortest float forms such as `1e-7`).

All three hold the same document. Converting is reading one layout and writing another, and a
round trip gives back the same bytes for any file its own writer produced (every run's file,
ours or the reference's). Two facts make that hold: the simulation index is derived data (a
folder rebuilds it when written; read back into a single file it is dropped for our layout and
left null for the json layout, as runs write them), and a folder's simulations are read in the
index's order (the reference reads them in file-name order, which loses the run's order).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from tau_mcp.harness.redaction import redact_document
from tau_mcp.harness.results.folder import (
    INDEX_KEY,
    META_FILE,
    SIMULATIONS_DIR,
    LayoutError,
    dir_paths,
    read_dir,
    read_json,
)

Layout = Literal["tau-mcp", "json", "dir"]
LAYOUTS: tuple[Layout, ...] = ("tau-mcp", "json", "dir")
REFERENCE_ORDER = ("timestamp", "info", "tasks", "simulations", INDEX_KEY)


# --- telling layouts apart -------------------------------------------------------------------


def detect(path: Path) -> Layout:
    """The layout of a results file or folder (a single file is ours or the reference's by the
    indent its writer uses)."""
    if dir_paths(path) is not None:
        return "dir"
    try:
        with Path(path).open("rb") as fh:
            head = fh.read(4)
    except FileNotFoundError:
        raise LayoutError(f"no such file or folder: {path}") from None
    except OSError as exc:
        raise LayoutError(f"cannot read {path} ({exc.strerror})") from None
    return "tau-mcp" if head == b'{\n "' else "json"


# --- reading ---------------------------------------------------------------------------------


def read(path: Path) -> dict[str, Any]:
    """Any layout as one document (our single files and the reference's read alike)."""
    if detect(path) == "dir":
        return read_dir(path)
    data = read_json(Path(path))
    if not isinstance(data, dict) or not isinstance(data.get("simulations"), list):
        raise LayoutError(f"{path} is not a results file (no list of simulations)")
    return data


# --- writing ---------------------------------------------------------------------------------


def serialize_simulation(simulation: dict[str, Any]) -> str:
    """One simulation as our layout holds it (a run serializes each once, as it finishes)."""
    return json.dumps(simulation, indent=1, default=str)


def ours_text(header: dict[str, Any], serialized: list[str]) -> str:
    """Our layout: the header (everything but the simulations, in its order), then the
    simulations, each as `serialize_simulation` wrote it."""
    head = json.dumps(header, indent=1, default=str)
    if not head.endswith("\n}"):
        raise LayoutError("a results file needs a header (info, tasks) besides its simulations")
    body = ",\n".join(serialized)
    return f'{head[:-2]},\n "simulations": [\n{body}\n ]\n}}\n'


def tau_mcp_text(document: dict[str, Any]) -> str:
    """A whole document in our layout (keys redacted, as every writer redacts them)."""
    document = redact_document(document)
    header = {k: v for k, v in document.items() if k != "simulations"}
    return ours_text(header, [serialize_simulation(sim) for sim in document["simulations"]])


def _reference_order(document: dict[str, Any]) -> dict[str, Any]:
    known = {k: document[k] for k in REFERENCE_ORDER if k in document}
    return {**known, **{k: v for k, v in document.items() if k not in known}}


def json_text(document: dict[str, Any]) -> str:
    """The reference's single-file layout as `tau2 run` writes it (keys redacted)."""
    return json.dumps(_reference_order(redact_document(document)), indent=2)


def simulation_index(simulations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reference's summary of each simulation, kept in a folder's results.json."""
    return [
        {
            "id": sim.get("id"),
            "task_id": sim.get("task_id"),
            "trial": sim.get("trial"),
            "reward": (sim.get("reward_info") or {}).get("reward"),
            "termination_reason": sim.get("termination_reason"),
            "agent_cost": sim.get("agent_cost"),
            "duration": sim.get("duration"),
        }
        for sim in simulations
    ]


def dir_files(document: dict[str, Any]) -> dict[str, bytes]:
    """The reference's folder layout: relative path -> bytes (keys redacted)."""
    import orjson  # the reference's float forms; only converting needs it, not every run

    document = redact_document(document)
    meta = {k: v for k, v in _reference_order(document).items() if k != "simulations"}
    meta[INDEX_KEY] = simulation_index(document["simulations"])
    files = {META_FILE: json.dumps(meta, indent=2).encode("utf-8")}
    for sim in document["simulations"]:
        sim_id = str(sim.get("id") or "")
        if not sim_id or "/" in sim_id or "\\" in sim_id or sim_id.startswith("."):
            raise LayoutError(
                f"simulation id {sim_id!r} cannot name a file, so the folder layout cannot hold it"
            )
        name = f"{SIMULATIONS_DIR}/{sim_id}.json"
        if name in files:
            raise LayoutError(f"two simulations share the id {sim_id}; the folder layout needs one")
        try:
            files[name] = orjson.dumps(sim, option=orjson.OPT_INDENT_2)
        except TypeError as exc:
            raise LayoutError(f"simulation {sim_id} cannot be written ({exc})") from None
    return files


def convert_document(document: dict[str, Any], source: Layout, target: Layout) -> dict[str, Any]:
    """The document as the target layout holds it. Only the index changes, and only when it
    was derived (read from a folder): our layout drops it and the json layout leaves it null,
    as runs write them; a folder rebuilds it when written."""
    if source != "dir" or target == "dir" or INDEX_KEY not in document:
        return document
    if target == "tau-mcp":
        return {k: v for k, v in document.items() if k != INDEX_KEY}
    return {**document, INDEX_KEY: None}


def single_file_text(document: dict[str, Any], layout: Layout) -> str:
    if layout == "tau-mcp":
        return tau_mcp_text(document)
    if layout == "json":
        return json_text(document)
    raise LayoutError(f"{layout} is not a single-file layout")
