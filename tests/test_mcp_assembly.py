"""The one MCP assembly (`tau_mcp.servers.mcp_assembly`): what a server built from a listing,
a call strategy and texts shows and answers, and that both servers of the project are built
with it."""

from __future__ import annotations

import ast
from pathlib import Path

from fastmcp import Client

from tau_mcp.conversation.tools import COST_META
from tau_mcp.servers.engine.episode import ToolOutcome
from tau_mcp.servers.mcp_assembly import McpText, assemble_mcp
from tau_mcp.servers.mcp_listing import ListedTool

ROOT = Path(__file__).resolve().parents[1]
READ = {"destructiveHint": False, "idempotentHint": True, "openWorldHint": False,
        "readOnlyHint": True}  # fmt: skip
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
TOOLS = [
    ListedTool("look_up", "Look something up.", SCHEMA, READ),
    ListedTool("a_write", "Change something.", {"type": "object", "properties": {}}, READ),
]


def _server(calls: list, **options):
    async def call(name: str, arguments: dict) -> ToolOutcome:
        calls.append((name, arguments))
        if name == "look_up":
            return ToolOutcome(f"found {arguments.get('q')}", False, 0.25)
        return ToolOutcome(f"Error: Tool '{name}' not found.", True)

    return assemble_mcp("assembly-test", TOOLS, call, version="9.9", **options)


async def test_tools_are_listed_in_order_with_titles_hints_and_schemas_as_given() -> None:
    async with Client(_server([])) as client:
        listed = await client.list_tools()
    assert [t.name for t in listed] == ["look_up", "a_write"]
    assert [t.title for t in listed] == ["Look Up", "A Write"]
    assert listed[0].input_schema == SCHEMA
    assert listed[0].annotations.model_dump(by_alias=True, exclude_none=True) == READ


async def test_every_call_listed_or_not_goes_to_the_strategy_and_is_rendered_once() -> None:
    calls: list = []
    async with Client(_server(calls)) as client:
        found = await client.call_tool_mcp("look_up", {"q": "x"})
        unlisted = await client.call_tool_mcp("no_such_tool", {"a": 1})
    assert calls == [("look_up", {"q": "x"}), ("no_such_tool", {"a": 1})]
    assert [c.text for c in found.content] == ["found x"] and not found.is_error
    assert (found.meta or {}).get(COST_META) == 0.25
    assert unlisted.is_error and unlisted.content[0].text == "Error: Tool 'no_such_tool' not found."
    assert COST_META not in (unlisted.meta or {})


async def test_static_texts_and_instructions() -> None:
    text = McpText("tau2://d/policy", "policy", "d agent policy", "the policy")
    server = _server([], instructions="follow the policy", texts=[text])
    async with Client(server) as client:
        assert client.instructions == "follow the policy"
        resources = await client.list_resources()
        content = await client.read_resource("tau2://d/policy")
    assert [(str(r.uri), r.name, r.title, r.mime_type) for r in resources] == [
        ("tau2://d/policy", "policy", "d agent policy", "text/markdown")
    ]
    assert content[0].text == "the policy"


async def test_a_text_read_per_request_is_read_when_asked() -> None:
    reads: list[int] = []

    def policy() -> str:
        reads.append(1)
        return f"policy #{len(reads)}"

    text = McpText("tau2://d/policy", "policy", "d agent policy", policy)
    server = _server([], instructions=policy, texts=[text])
    async with Client(server) as client:
        first = client.instructions
        content = await client.read_resource("tau2://d/policy")
    assert first == "policy #1"
    assert content[0].text == "policy #2"


def test_both_servers_are_built_by_the_assembly_and_only_it_builds_fastmcp_servers() -> None:
    """No module but the assembly constructs a FastMCP server or subclasses its tools (the
    compatibility checks build bare ones, to look at the library's insides)."""
    builders = []
    for folder in ("servers", "harness"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                called = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                if called and node.func.id == "FastMCP":
                    builders.append(str(path.relative_to(ROOT)))
                if isinstance(node, ast.ClassDef) and any(
                    isinstance(base, ast.Name) and base.id == "Tool" for base in node.bases
                ):
                    builders.append(str(path.relative_to(ROOT)))
    assert sorted(set(builders)) == ["servers/compat.py", "servers/mcp_assembly.py"]
    users = {
        str(path.relative_to(ROOT))
        for folder in ("servers", "harness")
        for path in (ROOT / folder).rglob("*.py")
        if "assemble_mcp(" in path.read_text(encoding="utf-8")
    }
    assert users == {
        "servers/mcp_assembly.py",
        "servers/mcp_tools.py",
        "harness/serve/endpoint.py",
    }


async def test_tools_carry_no_fastmcp_meta_tags() -> None:
    """Issue 31 item 16: FastMCP put `_meta: {"fastmcp": {"tags": []}}` on every tool, and some
    clients echo a tool's `_meta` into every call of it. The listing has none, on FastMCP's path
    and on the short path alike (tests/test_fast_calls.py checks that they agree)."""
    from tau_mcp.servers.mcp_listing import ListedTool as Listed

    async with Client(_server([])) as client:
        listed = await client.list_tools()
    assert [t.meta for t in listed] == [None, None]
    assert all("_meta" not in t.model_dump(by_alias=True, exclude_none=True) for t in listed)
    assert "_meta" not in Listed("x", "X.", SCHEMA, READ).wire()
