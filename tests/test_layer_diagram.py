"""The layer list of `docs/architecture.md` is true: every import of ours (function-local ones
included, on the grimp graph of `tests/support/import_graph.py`) goes from a layer to one drawn
below it, never up, and every code folder is drawn."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.import_graph import CODE_FOLDERS, build_graph

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SERVER_PARTS = ("engine", "knowledge", "domains")


def drawn_layers() -> list[str]:
    """The layers of the diagram under "## The layers", top first, by folder
    (`servers/domains/<d>/` → `servers/domains`, `servers/ (app layer)` → `servers`)."""
    section = DOC.read_text(encoding="utf-8").split("## The layers", 1)[1]
    block = section.split("```", 2)[1]
    layers = []
    for line in block.splitlines():
        match = re.match(r"([a-z_]+/(?:[a-z_]+/)?)", line)
        if match:
            layers.append(match.group(1).rstrip("/"))
    return layers


def layer_of(module: str) -> str:
    """`tau_mcp.servers.domains.airline.tools` → `servers/domains`; `tau_mcp.harness.x` →
    `harness`; the rest of `servers` is its app layer, `servers`."""
    parts = module.split(".")[1:]
    if len(parts) == 1 and parts[0] not in (*CODE_FOLDERS, "data"):
        return "tau_mcp"  # the namespace's own modules: its public faces
    if parts[0] == "servers" and len(parts) > 1 and parts[1] in SERVER_PARTS:
        return f"servers/{parts[1]}"
    return parts[0]


def test_the_diagram_draws_every_code_folder() -> None:
    layers = drawn_layers()
    expected = {"tau_mcp", *CODE_FOLDERS, *(f"servers/{part}" for part in SERVER_PARTS), "data"}
    assert set(layers) == expected and len(layers) == len(expected), layers


def test_every_import_points_down_the_diagram() -> None:
    order = {layer: rank for rank, layer in enumerate(drawn_layers())}
    graph = build_graph()
    upward = set()
    for importer in graph.modules:
        if importer.count(".") < 1:
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            if imported.count(".") < 1:
                continue
            source, target = layer_of(importer), layer_of(imported)
            assert source in order and target in order, f"{source} or {target} is not drawn"
            if order[source] > order[target]:  # drawn below what it imports
                upward.add(f"{importer} -> {imported}")
    assert not upward, f"imports pointing up docs/architecture.md's layers: {sorted(upward)}"
