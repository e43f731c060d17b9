"""What MCP clients are shown of the tools: the reference's texts when the data has them.

Each listing goes through a real MCP client (fastmcp's) and is turned into the request `tools`
exactly as the harness does it (`ToolInfo.openai_schema`), then compared with the data's
`tau2/reference_texts/tools/<domain>.json`: descriptions, input schemas and order, both sides.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from fastmcp import Client

from conversation.tools import ToolInfo
from harness.agents.base import AgentContext
from harness.agents.llm_agent import SoloAgent
from harness.agents.stop_tool import solo_stop_tool
from servers.app import ServerSettings, create_app
from servers.domains.registry import DOMAIN_NAMES, domain_spec, load_domains
from servers.engine.data import DEMO_DIR
from servers.engine.errors import DataError
from servers.engine.tool_listing import reference_tools_file, tool_listing
from servers.engine.toolkit import ToolKind
from servers.guards import LOOPBACK_HOSTS
from servers.stdio import build_stdio_server
from tests.support.server import DATA_DIR, InProcess, serving

TOOLS_DIR = DATA_DIR / "tau2" / "reference_texts" / "tools"
SIDES = ("agent", "user")


def _reference(domain: str, side: str, config: str | None = None) -> list[dict]:
    """The schemas the reference sends for a side. A file listing tools per variant
    (banking_knowledge: per retrieval config) names them; without a config, the variant the
    domain's own toolkit is."""
    raw = json.loads((TOOLS_DIR / f"{domain}.json").read_text())
    entries = raw[side]
    if isinstance(entries, dict):
        entries = entries[config or domain_spec(domain).tool_variant]
    named = dict(raw.get("schemas") or {})
    named.update({e["function"]["name"]: e for e in raw.get(f"{side}_schemas") or []})
    return [named[e] if isinstance(e, str) else e for e in entries]


async def _request_tools(client: Client) -> list[dict]:
    """The `tools` a harness model gets from this client's tools/list."""
    listed = await client.list_tools()
    return [
        ToolInfo(t.name, t.description or "", dict(t.input_schema or {})).openai_schema()
        for t in listed
    ]


@pytest.mark.needs_data("reference_texts")
async def test_every_http_endpoint_lists_the_reference_tools() -> None:
    domains = [d for d in DOMAIN_NAMES if (TOOLS_DIR / f"{d}.json").is_file()]
    # banking_knowledge's tools depend on the retrieval config: the server's default here.
    async with serving(domains, retrieval_config="bm25_grep") as srv, srv.http() as http:
        for domain in domains:
            created = (await http.post(f"/{domain}/episodes", json={})).json()
            paths = {
                "agent": [created["agent_mcp"], f"/{domain}/agent/mcp", f"/{domain}/mcp"],
                "user": [created["user_mcp"], f"/{domain}/user/mcp"],
            }
            for side, endpoints in paths.items():
                expected = _reference(domain, side, "bm25_grep")
                for path in endpoints:
                    async with srv.mcp(path) as client:
                        got = await _request_tools(client)
                    assert got == expected, f"{path} lists other tools than the reference"


@pytest.mark.needs_data("banking_knowledge", "reference_texts")
async def test_a_banking_episode_lists_its_retrieval_configs_tools() -> None:
    if not (TOOLS_DIR / "banking_knowledge.json").is_file():
        pytest.skip("banking_knowledge's reference tool texts are not in the data")
    async with serving(["banking_knowledge"]) as srv, srv.http() as http:
        for config in ("no_knowledge", "grep_only", "bm25", "bm25_grep", "golden_retrieval"):
            created = await http.post(
                "/banking_knowledge/episodes",
                json={"task_id": "task_001", "retrieval_config": config},
            )
            assert created.status_code == 201, created.text
            async with srv.mcp(created.json()["agent_mcp"]) as client:
                got = await _request_tools(client)
            assert got == _reference("banking_knowledge", "agent", config), config


@pytest.mark.needs_data("reference_texts")
@pytest.mark.parametrize("side", SIDES)
async def test_stdio_lists_the_reference_tools(side: str) -> None:
    server = build_stdio_server("telecom", side, data_dir=DATA_DIR)
    async with Client(server) as client:
        assert await _request_tools(client) == _reference("telecom", side)


@pytest.mark.needs_data("reference_texts")
async def test_annotations_stay_derived_from_the_engine_tool_kinds() -> None:
    async with serving(["airline"]) as srv:
        async with srv.mcp("/airline/agent/mcp") as client:
            listed = {t.name: t.annotations for t in await client.list_tools()}
    specs = domain_spec("airline").agent_tools.specs
    assert listed["get_user_details"].read_only_hint is True
    assert listed["cancel_reservation"].read_only_hint is False
    assert listed["cancel_reservation"].destructive_hint is True
    for name, hints in listed.items():
        kind = specs[name].kind
        assert hints.read_only_hint is (kind in (ToolKind.READ, ToolKind.THINK)), name


async def test_demo_data_lists_our_own_descriptions() -> None:
    settings = ServerSettings(allowed_hosts=(*LOOPBACK_HOSTS, "testserver"))
    app = create_app(domain_names=["mock"], data_dir=DEMO_DIR, settings=settings)
    async with app.router.lifespan_context(app):
        for side, toolkit in (
            ("agent", domain_spec("mock").agent_tools),
            ("user", domain_spec("mock").user_tools),
        ):
            async with InProcess(app).mcp(f"/mock/{side}/mcp") as client:
                listed = await client.list_tools()
            own = list(toolkit.specs.values())
            assert [t.name for t in listed] == [s.name for s in own]
            assert [t.description for t in listed] == [s.description for s in own]
            assert [t.input_schema for t in listed] == [s.input_schema for s in own]
    assert tool_listing(load_domains(["mock"], DEMO_DIR)["mock"], "agent").source == "own"


@pytest.mark.needs_data("reference_texts")
def test_partial_reference_keeps_our_tools_and_skips_unknown_ones(tmp_path: Path, caplog) -> None:
    """Reference texts for another engine version: run what we have, in the reference's order,
    ours (with our texts) last, and say so in the log."""
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR / "tau2" / "domains" / "mock", data / "tau2" / "domains" / "mock")
    reference = json.loads((TOOLS_DIR / "mock.json").read_text())
    first = reference["agent"][0]
    ghost = json.loads(json.dumps(reference["agent"][1]))
    ghost["function"]["name"] = "no_such_tool"
    reference["agent"] = [ghost, first]
    target = reference_tools_file(data, "mock")
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(reference))
    domain = load_domains(["mock"], data)["mock"]
    with caplog.at_level(logging.WARNING, logger="tau.engine"):
        listing = tool_listing(domain, "agent")
    own = domain_spec("mock").agent_tools.specs
    names = [spec.name for spec in listing.tools]
    assert names[0] == first["function"]["name"]
    assert sorted(names[1:]) == sorted(n for n in own if n != names[0])
    assert listing.tools[0].description == first["function"]["description"]
    assert listing.tools[1].description == own[names[1]].description
    assert "no_such_tool" in caplog.text


def test_corrupt_reference_tools_fail_with_one_sentence(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DEMO_DIR / "tau2" / "domains" / "mock", data / "tau2" / "domains" / "mock")
    target = reference_tools_file(data, "mock")
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps({"agent": [{"type": "function"}], "user": []}))
    with pytest.raises(DataError, match="not an OpenAI function schema"):
        tool_listing(load_domains(["mock"], data)["mock"], "agent")


@pytest.mark.needs_data("reference_texts")
def test_solo_agent_offers_the_reference_stop_tool() -> None:
    """Solo requests carry agent tools, user tools, then the finishing tool: the first two come
    over MCP, the last from the same reference file."""
    domains = load_domains(["mock", "airline"], DATA_DIR)
    reference = json.loads((TOOLS_DIR / "mock.json").read_text())["solo"]
    stop = solo_stop_tool(domains["mock"])
    assert stop is not None and stop.openai_schema() == reference["done_tool"]
    assert solo_stop_tool(domains["airline"]) is None  # the reference has no solo airline
    task = next(t for t in domains["mock"].tasks.values() if t.ticket)
    own = tool_listing(domains["mock"], "agent").tools + tool_listing(domains["mock"], "user").tools
    tools = [ToolInfo(s.name, s.description, s.input_schema) for s in own]
    context = AgentContext(
        task=task, domain="mock", policy="p", tools=tools, llm="openai/x", stop_tool=stop
    )
    assert SoloAgent(context).tool_schemas == reference["tools_in_order"]


def test_solo_stop_tool_is_ours_on_demo_data() -> None:
    assert solo_stop_tool(load_domains(["mock"], DEMO_DIR)["mock"]) is None
