"""One tool listing for every surface: each registered surface (`tau_mcp.servers.surfaces`), for every
domain, view and retrieval config it can run here, shows exactly the reference's tools
(`tau2/reference_texts/tools/<domain>.json`: names, descriptions, input schemas, order; per
retrieval config for banking_knowledge) when the data has them, else our own.

The surfaces are not listed here: every module of the project is imported (and the tests' own
engine-backed tool sessions, `tests/support/engine_backend.py`), each surface registers itself
where it is built, and the test enumerates the registry. A surface that does
not register cannot obtain a listing (only `servers/surfaces.py` reads the engine's listing
function, checked below).
"""

from __future__ import annotations

import ast
import asyncio
import importlib
import json
import logging
import pkgutil
import shutil
from pathlib import Path

import pytest

from tau_mcp.conversation.reference_prompts import user_tool_filter
from tau_mcp.conversation.tools import ToolInfo
from tau_mcp.harness.agents.base import AgentContext
from tau_mcp.harness.agents.llm_agent import SoloAgent
from tau_mcp.harness.agents.stop_tool import solo_stop_tool
from tau_mcp.harness.surface_probes import probe_task
from tau_mcp.servers.app import ServerSettings, create_app
from tau_mcp.servers.domains.registry import domain_names, domain_spec, load_domains
from tau_mcp.servers.engine.data import DEMO_DIR
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.tool_listing import reference_tools_file, tool_listing
from tau_mcp.servers.engine.toolkit import ToolKind
from tau_mcp.servers.engine.variants import VariantError
from tau_mcp.servers.guards import LOOPBACK_HOSTS
from tau_mcp.servers.knowledge.sandbox import sandbox_problem
from tau_mcp.servers.surfaces import (
    Surface,
    UnregisteredSurface,
    as_shown,
    from_openai,
    listing_as_shown,
    surfaces,
)
from tests.support.engine_backend import ENGINE_SESSION
from tests.support.server import DATA_DIR, InProcess, serving

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("servers", "harness", "simulator", "conversation")
"""The code folders, imported as `tau_mcp.<folder>`."""
TOOLS_DIR = DATA_DIR / "tau2" / "reference_texts" / "tools"
SIDES = ("agent", "user")
LISTING_FUNCTIONS = ("tool_listing", "listing_for")
ENGINE_SESSION_NAME = ENGINE_SESSION.name  # the tests' own surface (tests/support), imported above


def _import_everything() -> dict[str, str]:
    """Import every module of the project (so every surface registers); returns the modules
    that need an optional extra not installed here, with the reason."""
    missing: dict[str, str] = {}
    for folder in FOLDERS:
        for info in pkgutil.walk_packages([str(ROOT / folder)], prefix=f"tau_mcp.{folder}."):
            if info.name.rsplit(".", 1)[-1] == "__main__":
                continue
            try:
                importlib.import_module(info.name)
            except ModuleNotFoundError as exc:
                if (exc.name or "").split(".")[0] == "tau_mcp":
                    raise
                missing[info.name] = f"needs {exc.name}, not installed"
    return missing


MISSING_EXTRAS = _import_everything()
SURFACES = {surface.name: surface for surface in surfaces()}
REFERENCE_DOMAINS = [d for d in domain_names() if (TOOLS_DIR / f"{d}.json").is_file()]
# The retrieval configs every surface runs here: the offline ones (no network, no sandbox) and
# the shell ones (terminal_use*), which need only the bubblewrap sandbox and are skipped where it
# cannot start. The others (embeddings, rerankers, alltools*) need a key and a network: every
# surface's real path refuses them (it creates an episode or resolves the config first), so their
# listing is checked through the registry's one listing below, which every surface reads and
# which needs no backend.
OFFLINE_CONFIGS = ("no_knowledge", "full_kb", "golden_retrieval", "grep_only", "bm25", "bm25_grep")
SANDBOX_CONFIGS = ("terminal_use", "terminal_use_write")
NO_SANDBOX = sandbox_problem()


def _cases() -> list[object]:
    """(domain, variant) for every surface probe: a domain's retrieval configs that run here
    (the shell ones skipped, saying why, where the sandbox cannot start), else no variant."""
    needs_sandbox = pytest.mark.skipif(
        NO_SANDBOX is not None, reason=f"the shell sandbox cannot start here: {NO_SANDBOX}"
    )
    cases: list[object] = []
    for domain in REFERENCE_DOMAINS:
        if domain_spec(domain).variants is None:
            cases.append((domain, None))
            continue
        cases += [(domain, config) for config in OFFLINE_CONFIGS]
        cases += [pytest.param(domain, c, marks=needs_sandbox) for c in SANDBOX_CONFIGS]
    return cases


CASES = _cases()


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


def _reference_view(domain: str, view: str, config: str | None = None) -> list[dict] | None:
    if view == "solo":
        solo = json.loads((TOOLS_DIR / f"{domain}.json").read_text()).get("solo")
        return from_openai(solo["tools_in_order"]) if solo else None
    return from_openai(_reference(domain, view, config))


def _narrowed(tools: list[dict], domain) -> list[dict]:
    """The user tools the probe task allows, as the reference narrows the user's tools: the
    task's `user_tools` when it lists them (none if it names a tool the domain lacks)."""
    allowed = user_tool_filter(probe_task(domain))
    if allowed is None:
        return tools
    if set(allowed) - {t["name"] for t in tools}:
        return []
    return [t for t in tools if t["name"] in allowed]


def _check(surface: Surface, shown: list[dict] | None, expected: list[dict] | None, where: str):
    if expected is None:
        assert shown is None, f"{surface.name} offers {where}, which the reference does not"
        return
    assert shown is not None, f"{surface.name} does not offer {where}"
    if surface.rendering is not None:
        expected = [surface.rendering(tool) for tool in expected]
    listed, extra = shown[: len(expected)], shown[len(expected) :]
    assert [t["name"] for t in listed] == [t["name"] for t in expected], (
        f"{surface.name}, {where}: names or order differ"
    )
    for got, want in zip(listed, expected, strict=True):
        assert got == want, f"{surface.name}, {where}: '{got['name']}' differs"
    assert not extra or [t["name"] for t in extra] == list(surface.extra_tools), (
        f"{surface.name}, {where}: undeclared extra tools {[t['name'] for t in extra]}"
    )


def _probe(surface: Surface, domain, view: str, variant: str | None = None):
    return asyncio.run(surface.shown(domain, view, variant))  # type: ignore[arg-type]


def test_modules_whose_extra_is_missing_are_named() -> None:
    """A module that needs an extra not installed here cannot register its surfaces: say which
    (CI installs the extras; the verifiers environment's surface lives in a module of its own
    so it is checked everywhere)."""
    if MISSING_EXTRAS:
        pytest.skip("not imported: " + "; ".join(f"{m} ({r})" for m, r in MISSING_EXTRAS.items()))


def test_only_the_registry_reads_the_engine_listing() -> None:
    """No production module reaches the engine's listing functions (`tool_listing`,
    `listing_for`) but `servers/surfaces.py`: a surface gets its tools only through a
    registered `Surface`."""
    readers = []
    for folder in FOLDERS:
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if not isinstance(node, ast.ImportFrom):
                    continue
                if node.module not in (
                    "tau_mcp.servers.engine.tool_listing",
                    "tau_mcp.servers.engine",
                ):
                    continue
                if any(alias.name in LISTING_FUNCTIONS for alias in node.names):
                    readers.append(str(path.relative_to(ROOT)))
    assert readers == ["servers/surfaces.py"]


def test_an_unregistered_surface_gets_no_listing() -> None:
    domain = load_domains(["mock"], DEMO_DIR)["mock"]
    stray = Surface("stray", ("agent",), SURFACES[next(iter(SURFACES))].shown)
    with pytest.raises(UnregisteredSurface, match="stray"):
        stray.tools(domain, "agent")


@pytest.mark.needs_data("reference_texts")
@pytest.mark.parametrize(("domain_name", "variant"), CASES)
@pytest.mark.parametrize("surface_name", sorted(SURFACES))
def test_every_surface_shows_the_reference_tools(
    surface_name: str, domain_name: str, variant: str | None
) -> None:
    """Each surface, run with each retrieval config it can run here, shows that config's tools
    as the reference lists them (banking_knowledge: `agent: {config: [names]}`)."""
    surface = SURFACES[surface_name]
    domain = load_domains([domain_name], DATA_DIR)[domain_name]
    where = f"{domain_name}{'/' + variant if variant else ''}"
    for view in surface.views:
        expected = _reference_view(domain_name, view, variant)
        if view == "user" and surface.narrows_user_tools and expected is not None:
            expected = _narrowed(expected, domain)
        shown = _probe(surface, domain, view, variant)
        _check(surface, shown, expected, f"{where}/{view}")


@pytest.mark.needs_data("banking_knowledge", "reference_texts")
def test_the_registry_lists_every_retrieval_config_as_the_reference() -> None:
    """Every retrieval config the reference lists, those that cannot run here included: the
    registry's listing (what each surface shows) needs no backend, only the config's tools."""
    domain = load_domains(["banking_knowledge"], DATA_DIR)["banking_knowledge"]
    raw = json.loads((TOOLS_DIR / "banking_knowledge.json").read_text())
    assert set(OFFLINE_CONFIGS) | set(SANDBOX_CONFIGS) < set(raw["agent"])
    surface = SURFACES["tau-server /{domain}/{side}/mcp"]
    for config in raw["agent"]:
        listed = listing_as_shown(surface.tools(domain, "agent", config))
        assert listed == _reference_view("banking_knowledge", "agent", config), config
        user = listing_as_shown(surface.tools(domain, "user", config))
        assert user == _reference_view("banking_knowledge", "user"), config


@pytest.mark.needs_data("banking_knowledge", "reference_texts")
def test_a_config_that_cannot_run_here_is_refused_not_listed_wrong() -> None:
    """A surface run with a config that needs a network or a shell refuses it in one sentence
    naming an offline config, rather than listing some other config's tools."""
    domain = load_domains(["banking_knowledge"], DATA_DIR)["banking_knowledge"]
    refused = []
    for config in json.loads((TOOLS_DIR / "banking_knowledge.json").read_text())["agent"]:
        try:
            domain.resolve_variant(config)
        except VariantError:
            refused.append(config)
    if not refused:
        pytest.skip("every retrieval config can run on this machine")
    names = ("tau-server stdio", "verifiers environment (tool_defs)", ENGINE_SESSION_NAME)
    for name in names:
        with pytest.raises(VariantError, match="use an offline config"):
            _probe(SURFACES[name], domain, "agent", refused[0])


@pytest.mark.parametrize("surface_name", sorted(SURFACES))
def test_every_surface_shows_our_own_tools_without_reference_texts(surface_name: str) -> None:
    """On the demo data (no reference texts) every surface shows our toolkits' own texts."""
    surface = SURFACES[surface_name]
    domain = load_domains(["mock"], DEMO_DIR)["mock"]
    spec = domain_spec("mock")
    own = {
        side: [as_shown(s.name, s.description, s.input_schema) for s in kit.specs.values()]
        for side, kit in (("agent", spec.agent_tools), ("user", spec.user_tools))
    }
    for view in surface.views:
        shown = _probe(surface, domain, view)
        if view == "solo":
            assert shown is not None
            assert shown[:-1] == own["agent"] + own["user"], surface.name
            assert shown[-1]["name"] == "done", surface.name
            continue
        _check(surface, shown, own[view], f"mock/{view} on demo data")


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
