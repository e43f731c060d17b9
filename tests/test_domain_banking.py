"""banking_knowledge semantics the conformance fixtures only imply: the read-log rule, unlocks
kept in memory, the one shared database, the tasks folder, discoverable-tool texts, direct calls
of hidden tools, and tools an episode adds to the agent's toolkit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tau_mcp.servers.domains.banking_knowledge import SPEC
from tau_mcp.servers.domains.banking_knowledge.discoverable import (
    AGENT_CLASS,
    DiscoverableInfo,
    info,
)
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.episode import EpisodeStore
from tau_mcp.servers.engine.tool_listing import listing_for, reference_tools_file, tool_listing
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, tool
from tests.support import conformance as conf

FOLDER = conf.DATA_DIR / "tau2" / "domains" / "banking_knowledge"
TEXTS = conf.DATA_DIR / "tau2" / "reference_texts" / "banking_knowledge.json"

pytestmark = pytest.mark.needs_data("banking_knowledge")
needs_texts = pytest.mark.needs_data("reference_texts")

# task_085's gold reads get_all_user_accounts_by_user_id_3847 through the discoverable-tool
# wrapper (so that read is on its read-log allowlist); task_001's gold calls no such tool.
ALLOWLISTED_TASK = "task_085"


@pytest.fixture(scope="module")
def store() -> EpisodeStore:
    return EpisodeStore(load_domains(["banking_knowledge"], conf.DATA_DIR))


def agent(episode, name: str, **arguments) -> str:
    outcome = episode.call("agent", name, arguments)
    assert not outcome.error, outcome.text
    return outcome.text


def call_tool(episode, name: str, **arguments) -> str:
    return agent(
        episode,
        "call_discoverable_agent_tool",
        agent_tool_name=name,
        arguments=json.dumps(arguments),
    )


def logged_tools(episode) -> dict:
    return episode.snapshot()["agent_db"]["agent_discoverable_tools"]["data"]


def test_tasks_come_from_the_tasks_folder_in_file_order(store: EpisodeStore) -> None:
    domain = store.domain("banking_knowledge")
    files = sorted(p.stem for p in (FOLDER / "tasks").glob("task_*.json"))
    assert list(domain.tasks) == files and len(files) == 97
    listed = {t["id"]: t for t in json.loads((FOLDER / "tasks.json").read_text())}
    # task_102 is one of the 13 that differ: its file adds an NL assertion to the basis.
    assert domain.task("task_102").evaluation_criteria.reward_basis == ["DB", "NL_ASSERTION"]
    assert listed["task_102"]["evaluation_criteria"]["reward_basis"] == ["DB"]


def test_user_tools_act_on_the_one_database(store: EpisodeStore) -> None:
    episode = store.create("banking_knowledge", "task_001")
    assert episode.user_db is None and episode.user_tools.db is episode.agent_db
    before = episode.hashes()
    text = episode.call("user", "request_human_agent_transfer", {}).text
    assert text.startswith("Transfer request #1 submitted.")
    snapshot = episode.snapshot()
    assert snapshot["user_db"] is None
    assert "transfer_request_1" in snapshot["agent_db"]["human_transfer_requests"]["data"]
    assert episode.hashes()["user_db"] is None
    assert episode.hashes()["agent_db"] != before["agent_db"]


def test_unlocks_live_in_memory_and_not_in_the_database(store: EpisodeStore) -> None:
    episode = store.create("banking_knowledge", "task_001")
    before = episode.hashes()
    text = agent(
        episode, "unlock_discoverable_agent_tool", agent_tool_name="freeze_debit_card_3892"
    )
    assert text.startswith("Tool unlocked: freeze_debit_card_3892")
    assert episode.hashes() == before
    # A new episode of the same task starts locked (the cached start holds no unlock).
    fresh = store.create("banking_knowledge", "task_001")
    assert fresh.agent_tools.unlocked == {}
    refused = call_tool(fresh, "freeze_debit_card_3892", card_id="x")
    assert refused.startswith("Error: Tool 'freeze_debit_card_3892' has not been unlocked.")


def test_reads_are_logged_only_when_the_gold_actions_call_them(store: EpisodeStore) -> None:
    read = "get_all_user_accounts_by_user_id_3847"
    plain = store.create("banking_knowledge", "task_001")
    assert read not in plain.agent_tools.read_log_allowlist
    agent(plain, "unlock_discoverable_agent_tool", agent_tool_name=read)
    before = plain.hashes()
    assert call_tool(plain, read, user_id="lj82d4f1a9").startswith("User accounts retrieved")
    assert plain.hashes() == before and logged_tools(plain) == {}

    required = store.create("banking_knowledge", ALLOWLISTED_TASK)
    assert read in required.agent_tools.read_log_allowlist
    agent(required, "unlock_discoverable_agent_tool", agent_tool_name=read)
    call_tool(required, read, user_id="lj82d4f1a9")
    assert [r["tool_name"] for r in logged_tools(required).values()] == [read]


def test_writes_are_always_logged_even_when_they_refuse(store: EpisodeStore) -> None:
    episode = store.create("banking_knowledge", "task_001")
    agent(episode, "unlock_discoverable_agent_tool", agent_tool_name="freeze_debit_card_3892")
    text = call_tool(episode, "freeze_debit_card_3892", card_id="no_such_card")
    assert text == "Error: Debit card 'no_such_card' not found."
    assert [r["status"] for r in logged_tools(episode).values()] == ["CALLED"]


def test_bad_arguments_to_a_discoverable_tool_name_the_reference_class(
    store: EpisodeStore,
) -> None:
    episode = store.create("banking_knowledge", "task_001")
    name = "freeze_debit_card_3892"
    agent(episode, "unlock_discoverable_agent_tool", agent_tool_name=name)
    assert agent(episode, "call_discoverable_agent_tool", agent_tool_name=name, arguments="{}") == (
        f"Error: Invalid arguments: {AGENT_CLASS}.{name}() missing 1 required positional "
        f"argument: 'card_id'"
    )
    assert agent(episode, "call_discoverable_agent_tool", agent_tool_name=name, arguments="[]") == (
        f"Error: Invalid arguments: tau2.domains.banking_knowledge.tools.{AGENT_CLASS}.{name}() "
        f"argument after ** must be a mapping, not list"
    )
    # A failed call is not logged.
    assert logged_tools(episode) == {}


def test_task_083_gold_calls_fail_as_in_the_reference(store: EpisodeStore) -> None:
    """The reference's own gold for task_083 omits a required argument; the calls fail."""
    episode = store.create("banking_knowledge", "task_083")
    for action in episode.task.evaluation_criteria.actions:
        outcome = episode.call("agent", action.name, action.arguments)
        if action.name == "call_discoverable_agent_tool":
            assert outcome.text.endswith(
                "missing 1 required positional argument: 'customer_max_liability_amount'"
            )
    assert episode.snapshot()["agent_db"]["debit_card_disputes"]["data"] == {}


def test_hidden_tools_are_callable_by_name_but_never_listed(store: EpisodeStore) -> None:
    domain = store.domain("banking_knowledge")
    listed = {spec.name for spec in tool_listing(domain, "agent").tools}
    assert "freeze_debit_card_3892" not in listed
    assert "unlock_discoverable_agent_tool" in listed
    episode = store.create("banking_knowledge", "task_001")
    # As in the reference, a direct call needs no unlock and is not logged.
    outcome = episode.call("agent", "get_current_time", {})
    assert outcome.text == "The current time is 2025-11-14 03:40:00 EST."
    direct = episode.call("agent", "freeze_debit_card_3892", {"card_id": "no_such_card"})
    assert direct.text == "Error: Debit card 'no_such_card' not found." and not direct.error
    assert logged_tools(episode) == {}


@needs_texts
def test_discoverable_tools_match_the_reference_inventory_and_texts() -> None:
    raw = json.loads(TEXTS.read_text())["discoverable_tools"]
    sides = {"agent": SPEC.agent_tools, "user": SPEC.user_tools}
    for side, toolkit in sides.items():
        assert sorted(toolkit.hidden_specs) == sorted(raw[side]), side
        for name, entry in raw[side].items():
            spec = toolkit.hidden_specs[name]
            assert spec.kind.value == entry["tool_type"] and spec.mutates == entry["mutates_state"]
            params = [p["name"] for p in entry["python_parameters"]]
            assert list(spec.input_schema["properties"]) == params, name
            described = info(conf.DATA_DIR, side, spec)
            if side == "agent":
                assert described.formatted() == entry["formatted"]
                assert described.unlocked_text() == entry["unlock_output"]
            else:
                assert described.given_text({}) == entry["give_output_no_args"]


def test_without_reference_texts_discoverable_tools_describe_themselves() -> None:
    spec = SPEC.agent_tools.hidden_specs["close_bank_account_7392"]
    own = info(None, "agent", spec)
    assert isinstance(own, DiscoverableInfo) and own.description == spec.description
    assert own.parameters["account_id"] == {
        "type": "string",
        "description": "The account to close.",
        "required": True,
    }
    assert own.parameters["waive_early_closure_fee"]["required"] is False
    assert "Tool unlocked: close_bank_account_7392" in own.unlocked_text()


@needs_texts
def test_the_domain_policy_is_the_no_knowledge_config_policy(store: EpisodeStore) -> None:
    configs = json.loads(TEXTS.read_text())["retrieval_configs"]
    assert store.domain("banking_knowledge").policy() == configs["no_knowledge"]["policy"]
    assert not store.domain("banking_knowledge").supports_solo


class _Finder(Toolkit):
    """A stand-in for a retrieval tool provider."""

    @tool(ToolKind.READ)
    def find(self, query: str) -> str:
        """Find something."""
        return f"found {query} in {self.db}"


def test_an_episode_can_add_tools_to_its_agent_toolkit(store: EpisodeStore) -> None:
    episode = store.create("banking_knowledge", "task_001")
    episode.agent_tools.add_tools(_Finder("the knowledge base"))
    assert episode.call("agent", "find", {"query": "fees"}).text == (
        "found fees in the knowledge base"
    )
    missing = episode.call("agent", "find", {})
    assert missing.error and "_Finder.find() missing 1 required positional argument" in missing.text
    assert set(episode.agent_tools.added_specs) == {"find"}
    with pytest.raises(ValueError, match="already defined"):
        episode.agent_tools.add_tools(_Finder("again"))
    # Added tools belong to that episode only.
    assert not store.create("banking_knowledge", "task_001").agent_tools.has_tool("find")


class _Retrieval(Toolkit):
    """Stand-ins named like a retrieval config's tools."""

    @tool(ToolKind.READ)
    def KB_search(self, query: str) -> str:  # noqa: N802 - the reference's tool name
        """Search."""
        return query

    @tool(ToolKind.READ)
    def grep(self, pattern: str) -> str:
        """Grep."""
        return pattern


@needs_texts
def test_added_tools_are_listed_where_the_reference_lists_them_for_a_config(
    store: EpisodeStore,
) -> None:
    domain = store.domain("banking_knowledge")
    episode = store.create("banking_knowledge", "task_001")
    episode.agent_tools.add_tools(_Retrieval(None))
    specs = {**episode.agent_tools.specs, **episode.agent_tools.added_specs}
    listing = listing_for(domain, "agent", specs, "bm25_grep")
    reference = json.loads(reference_tools_file(conf.DATA_DIR, domain.name).read_text())
    assert [t.name for t in listing.tools] == reference["agent"]["bm25_grep"]
    assert (
        listing.tools[0].description == reference["schemas"]["KB_search"]["function"]["description"]
    )
    assert listing.tools[0].kind is ToolKind.READ  # kinds stay ours


def test_a_data_folder_without_tasks_fails_with_one_sentence(tmp_path: Path) -> None:
    data = tmp_path / "data" / "tau2" / "domains" / "banking_knowledge"
    data.mkdir(parents=True)
    shutil.copy(FOLDER / "db.json", data / "db.json")
    domain = load_domains(["banking_knowledge"], tmp_path / "data")["banking_knowledge"]
    with pytest.raises(Exception, match="no task files"):
        _ = domain.tasks


ANNOUNCERS = (
    "example_agent_tool_0000",
    "initial_transfer_to_human_agent_0218",
    "initial_transfer_to_human_agent_1822",
    "emergency_credit_bureau_incident_transfer_1114",
)


@pytest.mark.parametrize("name", ANNOUNCERS)
def test_announcing_tools_say_what_their_description_announces(name: str, tmp_path: Path) -> None:
    """A tool that only announces something returns the result its description states (the
    reference texts' `Returns:`), and our own words when the data folder has no texts."""
    from tau_mcp.servers.domains.banking_knowledge.agent_tools import KnowledgeTools
    from tau_mcp.servers.domains.banking_knowledge.discoverable import announced_result

    class Episode:
        def __init__(self, data_dir):
            self.data_dir, self.task = data_dir, None

    bare = getattr(KnowledgeTools(None, Episode(tmp_path)), name)()
    assert announced_result(tmp_path, "agent", name) is None
    assert bare and "Returns" not in bare
    if not TEXTS.is_file():
        return
    with_texts = getattr(KnowledgeTools(None, Episode(conf.DATA_DIR)), name)()
    described = json.loads(TEXTS.read_text())["discoverable_tools"]["agent"][name]
    announced = announced_result(conf.DATA_DIR, "agent", name)
    assert announced and announced in described["tool_info"]["description"]
    assert with_texts.startswith(announced) and with_texts != bare
