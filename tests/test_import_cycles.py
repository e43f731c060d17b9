"""Imports run one way: no module of ours imports, directly or through others, a module that
imports it back (issue 19). The layer contracts of `pyproject.toml` (`lint-imports`) keep the
packages apart; this test keeps the modules inside a package apart too.

The graph is grimp's (import-linter's own graph library), built from the source of our packages.
It holds every import statement, including the ones inside functions (a lazy import still ties
two modules together; it only hides the circle until the function runs) and the ones under
`TYPE_CHECKING`. A package's `__init__` is a module like any other: importing its own submodule
is an ordinary edge (Python runs the `__init__` first anyway, and grimp adds no edge back), so
it is a circle only when that submodule, or something it imports, imports the package back
(`from tau_mcp.harness.agents import Agent` inside `tau_mcp.harness.agents.x`), which is a real circle: the
submodule would see the package half-initialized. Nothing is exempt.
"""

from __future__ import annotations

import grimp

from tests.support.import_graph import build_graph


def _graph() -> grimp.ImportGraph:
    return build_graph()


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """One shortest circle (first module repeated at the end) for each set of modules that
    import each other, found from every direct import whose target reaches its importer."""
    cycles: dict[frozenset[str], list[str]] = {}
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if imported == importer or not graph.chain_exists(imported, importer):
                continue
            back = graph.find_shortest_chain(imported, importer)
            cycle = [importer, *back]
            cycles.setdefault(frozenset(cycle), cycle)
    return sorted(cycles.values())


def test_the_graph_holds_function_local_imports() -> None:
    """The check can see a lazy import (else a circle closed by one would pass unseen)."""
    graph = _graph()
    assert {
        "tau_mcp.harness.simulate",
        "tau_mcp.servers.engine.data",
        "tau_mcp.grading.grader",
    } <= graph.modules
    # `captured_participant` imports the runner inside the function.
    assert graph.direct_import_exists(
        importer="tau_mcp.harness.surface_probes", imported="tau_mcp.harness.simulate"
    )


def test_the_cycle_finder_names_a_circle() -> None:
    graph = grimp.ImportGraph()
    for module in ("p", "p.a", "p.b", "p.c"):
        graph.add_module(module)
    graph.add_import(importer="p.a", imported="p.b")
    graph.add_import(importer="p.b", imported="p.c")
    graph.add_import(importer="p.c", imported="p.a")
    graph.add_import(importer="p", imported="p.a")
    assert import_cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]


def test_no_module_imports_itself_back() -> None:
    cycles = import_cycles(_graph())
    assert not cycles, "import circles (move the shared piece into a module both import):\n" + (
        "\n".join(" -> ".join(cycle) for cycle in cycles)
    )
