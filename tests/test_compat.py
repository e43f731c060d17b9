"""Every reach past the documented API of FastMCP, the MCP SDK or uvicorn is in
`servers/compat.py`, and each one is checked against the installed libraries: an upgrade that
moves or renames what a hook uses fails here, naming the hook."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import uvicorn
from fastmcp import FastMCP
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from tau_mcp.servers import compat

ROOT = Path(__file__).resolve().parents[1]
CODE_FOLDERS = ("servers", "harness", "simulator", "conversation", "grading")
COMPAT = ROOT / "servers" / "compat.py"
LIBRARIES = ("fastmcp", "mcp", "mcp_types", "uvicorn")
# Modules of those libraries that are their machinery, not their API, whatever their names.
INTERNAL_MODULES = ("uvicorn.protocols", "fastmcp.server.mixins")


@pytest.mark.parametrize("hook", compat.HOOKS, ids=[hook.name for hook in compat.HOOKS])
async def test_every_hook_still_finds_what_it_uses(hook: compat.Hook) -> None:
    problem = await hook.check()
    assert problem is None, (
        f"servers/compat.py hook '{hook.name}' ({hook.touches}) is broken by the installed "
        f"libraries: {problem}. An upgrade moved or renamed it; adapt the hook."
    )


@pytest.mark.parametrize(
    ("hook_name", "owner", "attribute"),
    [
        ("stdio_session", FastMCP, "_lifespan_manager"),
        (
            "session_manager_of / open_session_ids / end_session",
            StreamableHTTPSessionManager,
            "_discard_session",
        ),
        ("server_keeping_signals", uvicorn.Server, "capture_signals"),
    ],
)
async def test_a_check_fails_naming_what_moved(monkeypatch, hook_name, owner, attribute) -> None:
    """The checks can fail: with the attribute gone (as after a rename), the hook's check says
    what is missing."""
    hook = next(hook for hook in compat.HOOKS if hook.name == hook_name)
    defining = next(klass for klass in owner.__mro__ if attribute in vars(klass))
    monkeypatch.delattr(defining, attribute)
    problem = await hook.check()
    assert problem is not None and attribute in problem


def test_a_hook_that_lost_its_attribute_fails_with_one_sentence_naming_it() -> None:
    class NotFastMCP:
        pass

    with pytest.raises(compat.LibraryChanged, match="serve_input_schemas.*'_mcp_server'"):
        compat.serve_input_schemas(NotFastMCP(), {})


def _private_names(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of every private attribute a module reads of an object not its own
    (`self`, `cls`), directly or by a constant name (`getattr(x, "_name")`, `_private(...)`)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append((node.lineno, node.attr))
        elif isinstance(node, ast.Call) and len(node.args) > 1:
            first, second = node.args[0], node.args[1]
            if isinstance(first, ast.Name) and first.id in ("self", "cls"):
                continue
            if isinstance(second, ast.Constant) and isinstance(second.value, str):
                found.append((node.lineno, second.value))
    return [(line, n) for line, n in found if n.startswith("_") and not n.startswith("__")]


HOOKED_NAMES = {name for _, name in _private_names(ast.parse(COMPAT.read_text()))}
"""The private names of the libraries compat.py uses: no other module may touch them."""


def _reaches(path: Path) -> list[str]:
    """What a module reaches of the libraries' insides: private or internal modules it
    imports, private names it imports from them, the private names compat.py hooks, and (in a
    module that imports the libraries at all) any private attribute of an object not its own."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    uses_libraries = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            modules += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for module in modules:
                if module.split(".")[0] not in LIBRARIES:
                    continue
                uses_libraries = True
                private = any(part.startswith("_") for part in module.split("."))
                if private or module.startswith(INTERNAL_MODULES):
                    found.append(f"line {node.lineno}: imports {module}")
                if isinstance(node, ast.ImportFrom):
                    names = [a.name for a in node.names if a.name.startswith("_")]
                    found += [f"line {node.lineno}: imports {module}.{n}" for n in names]
    for line, name in _private_names(tree):
        if uses_libraries or name in HOOKED_NAMES:
            found.append(f"line {line}: reaches .{name}")
    return found


def test_no_module_but_compat_reaches_into_fastmcp_mcp_or_uvicorn() -> None:
    offenders = {
        str(path.relative_to(ROOT)): reaches
        for folder in CODE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if path != COMPAT and (reaches := _reaches(path))
    }
    assert offenders == {}, f"move these into servers/compat.py (one hook each): {offenders}"


def test_the_scan_sees_a_reach(tmp_path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from fastmcp import FastMCP\nfrom mcp.shared._context_streams import x\n"
        "def f(server: FastMCP):\n    return server._mcp_server\n"
    )
    assert [line.split(": ")[1] for line in _reaches(module)] == [
        "imports mcp.shared._context_streams",
        "reaches ._mcp_server",
    ]
