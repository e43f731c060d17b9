"""The τ-bench domains on the engine: where their data comes from, their tasks and splits, the
policy and tool listing read from the data, calls as the original makes them, the endings and
the reward rules that differ from tau2's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_mcp.conversation.messages import ChatMessage, ToolCall, ToolMessage
from tau_mcp.grading.grader import Grader
from tau_mcp.harness.orchestrator import Orchestrator
from tau_mcp.servers.domains.registry import has_data, load_domains
from tau_mcp.servers.domains.tau_bench.reward import original_reward_info
from tau_mcp.servers.domains.tau_bench.tasks import original_task
from tau_mcp.servers.domains.tau_bench_airline import SPEC as AIRLINE
from tau_mcp.servers.domains.tau_bench_retail import SPEC as RETAIL
from tau_mcp.servers.engine.data import DEMO_DIR, DataLocation
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.errors import DataError, UnknownTask
from tau_mcp.servers.engine.tool_listing import tool_listing
from tests.support import taubench as tb
from tests.support.engine_backend import EngineBackend
from tests.test_harness_orchestrator_parity import RecordingSession, ScriptAgent, ScriptUser

pytestmark = pytest.mark.needs_data("taubench")

RETAIL_FOLDER = tb.TAUBENCH_DIR / "taubench" / "domains" / "retail"


def retail() -> Domain:
    return tb.domains()[RETAIL.name]


def airline() -> Domain:
    return tb.domains()[AIRLINE.name]


# --- where the data lives ------------------------------------------------------------------
def test_data_comes_from_taubench_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    assert retail().folder == RETAIL_FOLDER
    monkeypatch.delenv("TAUBENCH_DATA_DIR")
    with pytest.raises(DataError, match=r"^domain 'tau-bench-retail': no data folder: set TAUB"):
        Domain(RETAIL, DEMO_DIR)
    monkeypatch.setenv("TAUBENCH_DATA_DIR", "/no/such/folder")
    with pytest.raises(DataError, match="does not exist"):
        Domain(AIRLINE, DEMO_DIR)


def test_a_location_with_a_default_root_and_tau2s_layout(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "packs" / "x").mkdir(parents=True)
    shipped = DataLocation(
        layout="packs/{folder}", env_var="NO_SUCH_VAR_SET", default_root=tmp_path
    )
    monkeypatch.delenv("NO_SUCH_VAR_SET", raising=False)
    assert shipped.folder(DEMO_DIR, "x") == tmp_path / "packs" / "x"
    # The default is tau2's layout under the data folder the domains are loaded with.
    mock = load_domains(["mock"], DEMO_DIR)["mock"]
    assert mock.folder == DEMO_DIR / "tau2" / "domains" / "mock"
    assert has_data("mock", DEMO_DIR) and not has_data("mock", tmp_path)


def test_the_database_is_one_file_per_table() -> None:
    assert list(type(retail().base.model).model_fields) == ["orders", "products", "users"]
    assert list(type(airline().base.model).model_fields) == ["flights", "reservations", "users"]
    assert retail().user_base is None


# --- tasks, policy, tools ------------------------------------------------------------------
def test_tasks_per_split_numbered_within_the_split() -> None:
    assert {s: len(ids) for s, ids in retail().splits.items()} == {
        "test": 115,
        "train": 500,
        "dev": 20,
    }
    assert airline().splits.keys() == {"test"}
    assert retail().default_split == "test"
    assert retail().task_ids("dev")[:2] == ["dev_0", "dev_1"]
    with pytest.raises(UnknownTask, match="unknown split 'base'.*have: dev, test, train"):
        retail().task_ids("base")
    raw = json.loads((RETAIL_FOLDER / "tasks_train.json").read_text())[7]
    task = retail().task("train_7")
    assert original_task(task) == {
        k: raw[k] for k in ("user_id", "actions", "instruction", "outputs")
    }
    criteria = task.evaluation_criteria
    assert criteria is not None and criteria.reward_basis == ["DB", "COMMUNICATE"]
    assert [(a.name, a.arguments) for a in criteria.actions or []] == [
        (a["name"], a["kwargs"]) for a in raw["actions"]
    ]
    assert criteria.communicate_info == raw["outputs"]
    # Its tasks_<split>.json files are its own tasks, not named task sets.
    assert set(retail().task_sets()) == {"tau-bench-retail", "retail"}


def test_policy_and_tool_listing_are_read_from_the_data() -> None:
    for domain in (retail(), airline()):
        assert domain.policy() == (domain.folder / "wiki.md").read_text()
        listed = json.loads((domain.folder / "tools.json").read_text())
        listing = tool_listing(domain, "agent")
        assert listing.source == "reference"
        assert [(t.name, t.description, t.input_schema) for t in listing.tools] == [
            (f["function"]["name"], f["function"]["description"], f["function"]["parameters"])
            for f in listed
        ]
        assert tool_listing(domain, "user").tools == ()
        # Our own specs (used by nothing here) never ask the caller for `data`.
        for spec in domain.spec.agent_tools.specs.values():
            assert "data" not in spec.input_schema["properties"]


# --- calls as the original makes them ------------------------------------------------------
def test_calls_fail_with_the_originals_messages() -> None:
    episode = Episode(retail(), "calls", retail().task("test_0"))
    assert episode.call("agent", "respond_to_user", {"x": 1}).text == (
        "Unknown action respond_to_user"
    )
    assert episode.call("agent", "get_user_details", {}).text == (
        "Error: GetUserDetails.invoke() missing 1 required positional argument: 'user_id'"
    )
    assert episode.call("agent", "modify_user_address", {"user_id": "x"}).text.endswith(
        "missing 6 required positional arguments: 'address1', 'address2', 'city', 'state', "
        "'country', and 'zip'"
    )
    assert episode.call("agent", "think", {"thought": "a", "data": {}}).text == (
        "Error: tau_bench.envs.retail.tools.think.Think.invoke() got multiple values for "
        "keyword argument 'data'"
    )
    assert episode.call("agent", "think", {"self": 1, "thought": "a"}).text == (
        "Error: Think.invoke() got an unexpected keyword argument 'self'"
    )
    assert episode.hashes()["agent_db"] == retail().base.canonical.base_hash


def test_a_fourth_certificate_is_refused_in_one_sentence() -> None:
    """The original returns None (and crashes) once certificate_3221322..24 exist."""
    episode = Episode(airline(), "certs", airline().task("test_0"))
    user = airline().task("test_0").model_extra["original"]["user_id"]
    texts = [
        episode.call("agent", "send_certificate", {"user_id": user, "amount": 50}).text
        for _ in range(4)
    ]
    assert texts[2] == f"Certificate certificate_3221324 added to user {user} with amount 50."
    assert texts[3] == f"Error: user {user} cannot receive more certificates"


# --- endings and reward ---------------------------------------------------------------------
async def test_the_terminate_tool_ends_the_conversation_after_it_runs() -> None:
    calls = [
        ToolCall(id="a", name="think", arguments={"thought": "x"}),
        ToolCall(id="b", name="transfer_to_human_agents", arguments={"summary": "help"}),
        ToolCall(id="c", name="cancel_pending_order", arguments={}),
    ]
    agent = ScriptAgent([ChatMessage(role="assistant", tool_calls=calls)])
    user = ScriptUser([ChatMessage(role="user", content="Hi")])
    tools = RecordingSession("agent")
    conversation = await Orchestrator(
        agent, user, tools, None, terminate_tools=frozenset(RETAIL.terminate_tools)
    ).run([])
    assert conversation.termination.value == "agent_stop"
    assert [name for name, _ in tools.calls] == ["think", "transfer_to_human_agents"]
    assert isinstance(conversation.messages[-1], ToolMessage)


async def test_outputs_count_only_in_replies_and_the_data_hash_counts_without_outputs() -> None:
    domain = retail()
    task = domain.task("test_2")  # outputs ["10"]
    backend = EngineBackend({domain.name: domain})
    grader = Grader(backend, domain)
    ref = await backend.create_episode(domain.name, task.id)
    # "10" said beside a tool call is not a reply to the user: not found.
    said_with_a_call = ChatMessage(
        role="assistant",
        content="There are 10 options.",
        tool_calls=[ToolCall(id="t", name="think", arguments={"thought": "x"})],
    )
    messages = [ChatMessage(role="user", content="hi"), said_with_a_call]
    info = await grader.grade(task, messages, "user_stop", ref)
    assert original_reward_info(task, info)["info"] == {"r_outputs": 0.0, "outputs": {"10": False}}
    # In a reply it is found, but the data still differs from the gold state: reward 0, and
    # the original reports only the outputs.
    reply = ChatMessage(role="assistant", content="We have 1,0 ... no: 10 t-shirt options.")
    info = await grader.grade(task, [*messages, reply], "user_stop", ref)
    original = original_reward_info(task, info)
    assert original["reward"] == 0.0 and info["db_check"]["db_match"] is False
    assert original["info"] == {"r_outputs": 1.0, "outputs": {"10": True}}


def test_lookups_fail_where_the_original_fails() -> None:
    episode = Episode(retail(), "lookups", retail().task("test_0"))

    def find(**arguments) -> str:
        return episode.call("agent", "find_user_id_by_name_zip", arguments).text

    # The last name is lowercased only for a user whose first name matches.
    assert find(first_name="Nobody", last_name=None, zip="1") == "Error: user not found"
    none_lower = "Error: 'NoneType' object has no attribute 'lower'"
    assert find(first_name="Yusuf", last_name=None, zip="1") == none_lower
    assert find(first_name=None, last_name="Rossi", zip="19122") == none_lower
    assert find(first_name="yusuf", last_name="ROSSI", zip="19122") == "yusuf_rossi_9620"


def test_records_behave_as_the_originals_dicts() -> None:
    episode = Episode(retail(), "records", retail().task("test_0"))
    order = json.loads(episode.call("agent", "get_order_details", {"order_id": "#W4776164"}).text)
    assert order["status"] == "pending"
    cancelled = episode.call(
        "agent", "cancel_pending_order", {"order_id": "#W4776164", "reason": "no longer needed"}
    ).text
    again = episode.call("agent", "get_order_details", {"order_id": "#W4776164"}).text
    assert again == cancelled and list(json.loads(again))[-1] == "cancel_reason"
    record = episode.agent_db.orders["#W4776164"]
    with pytest.raises(KeyError, match="'missing'"):
        record["missing"]
    with pytest.raises(TypeError, match="unhashable type: 'list'"):
        record[["status"]]
    record["status"] = 7  # nothing validates what a tool writes; it dumps as written
    copied = record.__deepcopy__()
    copied["payment_history"].append({"x": True})
    dumped = episode.snapshot()["agent_db"]["orders"]["#W4776164"]
    assert dumped["status"] == 7 and {"x": True} not in dumped["payment_history"]
    # The shared base record is untouched.
    assert retail().base.field_json("orders")["#W4776164"]["status"] == "pending"
