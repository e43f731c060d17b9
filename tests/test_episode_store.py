"""The episode store: isolation, copy-on-write, snapshot layout, and clear errors for bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.canonical import canonical_hash
from tau_mcp.servers.engine.data import DEMO_DIR
from tau_mcp.servers.engine.episode import EpisodeStore
from tau_mcp.servers.engine.errors import (
    DataError,
    EngineError,
    EpisodeExists,
    InitialStateError,
    UnknownDomain,
    UnknownEpisode,
    UnknownTask,
)


@pytest.fixture()
def store() -> EpisodeStore:
    return EpisodeStore(load_domains(["mock"], DEMO_DIR))


def test_episodes_are_isolated(store: EpisodeStore) -> None:
    first = store.create("mock", "demo_complete")
    second = store.create("mock", "demo_complete")
    assert not first.call(
        "agent", "update_task_status", {"task_id": "task_3", "status": "completed"}
    ).error
    assert first.snapshot()["agent_db"]["tasks"]["task_3"]["status"] == "completed"
    assert second.snapshot()["agent_db"]["tasks"]["task_3"]["status"] == "pending"
    assert first.hashes() != second.hashes()


def test_base_data_never_changes(store: EpisodeStore) -> None:
    domain = store.domain("mock")
    before = canonical_hash(domain.base.model.model_dump(mode="json"))
    episode = store.create("mock", None)
    episode.call("agent", "create_task", {"user_id": "ana", "title": "x"})
    episode.call("agent", "update_task_status", {"task_id": "task_1", "status": "completed"})
    episode.call("user", "dismiss_notification", {"notification_id": "note_1"})
    assert canonical_hash(domain.base.model.model_dump(mode="json")) == before
    assert domain.base.model.users["ana"].tasks == ["task_1", "task_2"]
    assert store.create("mock", None).hashes() == store.create("mock", None).hashes()


def test_copy_on_write_copies_only_touched_records(store: EpisodeStore) -> None:
    episode = store.create("mock", None)
    assert episode.agent_db.retained_records() == 0
    episode.call("agent", "update_task_status", {"task_id": "task_1", "status": "completed"})
    tasks = episode.agent_db.tasks
    assert tasks.owned_keys() == {"task_1"}
    assert tasks.peek("task_2") is store.domain("mock").base.model.tasks["task_2"]


def test_snapshot_layout_matches_the_data_file(store: EpisodeStore) -> None:
    raw = json.loads((DEMO_DIR / "tau2/domains/mock/db.json").read_text())
    snap = store.create("mock", None).snapshot()
    assert snap["agent_db"] == raw
    assert set(snap["user_db"]) == {"notifications"}
    assert canonical_hash(snap["agent_db"]) == store.create("mock", None).agent_db.canonical_hash()


def test_hash_tracks_adds_and_matches_a_full_dump(store: EpisodeStore) -> None:
    episode = store.create("mock", None)
    episode.call("agent", "create_task", {"user_id": "bo", "title": "New"})
    assert episode.agent_db.canonical_hash() == canonical_hash(episode.snapshot()["agent_db"])


def test_initial_state_replays_message_history(store: EpisodeStore) -> None:
    episode = store.create("mock", "demo_history")
    assert episode.snapshot()["agent_db"]["tasks"]["task_4"]["title"] == "Renew passport"


def test_unknown_names_give_clear_errors(store: EpisodeStore) -> None:
    with pytest.raises(UnknownDomain, match="unknown domain 'nope'"):
        store.create("nope", None)
    with pytest.raises(UnknownTask, match="unknown task 'missing'"):
        store.create("mock", "missing")
    with pytest.raises(UnknownEpisode):
        store.get("mock", "no-such-episode")
    with pytest.raises(UnknownTask, match="unknown split"):
        store.domain("mock").task_ids("nosplit")
    episode = store.create("mock", None, "fixed-id")
    with pytest.raises(EpisodeExists):
        store.create("mock", None, "fixed-id")
    outcome = episode.call("agent", "delete_everything", {})
    assert outcome.error and outcome.text == "Error: Tool 'delete_everything' not found."
    assert episode.call("user", "get_users", {}).error  # agent tool on the user side
    store.delete("mock", "fixed-id")
    with pytest.raises(UnknownEpisode):
        store.delete("mock", "fixed-id")


def test_capacity_evicts_least_recently_used() -> None:
    small = EpisodeStore(load_domains(["mock"], DEMO_DIR), capacity=2)
    a = small.create("mock", None, "a")
    small.create("mock", None, "b")
    small.get("mock", "a")
    small.create("mock", None, "c")
    assert small.find("mock", "b") is None and small.find("mock", "a") is a


def _copy_demo(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(DEMO_DIR, target)
    return target


def test_missing_or_corrupt_data_names_the_file(tmp_path: Path) -> None:
    folder = _copy_demo(tmp_path)
    db = folder / "tau2/domains/mock/db.json"
    db.write_text("{not json")
    with pytest.raises(DataError, match="db.json"):
        EpisodeStore(load_domains(["mock"], folder)).create("mock", None)
    db.unlink()
    with pytest.raises(DataError, match="missing data file: .*db.json"):
        EpisodeStore(load_domains(["mock"], folder)).create("mock", None)
    with pytest.raises(DataError, match="does not exist"):
        load_domains(["mock"], tmp_path / "nowhere")


def test_schema_mismatch_names_the_file(tmp_path: Path) -> None:
    folder = _copy_demo(tmp_path)
    (folder / "tau2/domains/mock/db.json").write_text(
        json.dumps({"tasks": {}, "users": {"u": {"name": 3}}})
    )
    with pytest.raises(DataError, match=r"db.json does not match the MockDB schema"):
        EpisodeStore(load_domains(["mock"], folder)).create("mock", None)


def test_bad_initial_state_is_reported(tmp_path: Path) -> None:
    folder = _copy_demo(tmp_path)
    tasks_file = folder / "tau2/domains/mock/tasks.json"
    tasks = json.loads(tasks_file.read_text())
    tasks[0]["initial_state"] = {
        "initialization_actions": [
            {"env_type": "assistant", "func_name": "no_such", "arguments": {}}
        ]
    }
    tasks_file.write_text(json.dumps(tasks))
    store = EpisodeStore(load_domains(["mock"], folder))
    with pytest.raises(InitialStateError, match="no_such"):
        store.create("mock", tasks[0]["id"])


def test_policy_texts_and_solo_support(store: EpisodeStore) -> None:
    domain = store.domain("mock")
    assert "Task desk" in domain.policy() and "ticket mode" in domain.policy(solo=True)
    from tau_mcp.servers.engine.domain import Domain, DomainSpec

    no_solo = Domain(
        DomainSpec(**{**domain.spec.__dict__, "solo_policy_files": ()}), domain.data_dir
    )
    with pytest.raises(EngineError, match="does not support solo mode"):
        no_solo.policy(solo=True)


def test_assertions_have_one_verdict_layout_and_one_error_text(store: EpisodeStore) -> None:
    episode = store.create("mock", None)
    results = episode.check_assertions(
        [
            {
                "env_type": "assistant",
                "func_name": "assert_task_status",
                "arguments": {"task_id": "task_2", "expected_status": "completed"},
            },
            {
                "env_type": "assistant",
                "func_name": "assert_task_status",
                "arguments": {"task_id": "task_1", "expected_status": "completed"},
            },
            {"env_type": "assistant", "func_name": "create_task", "arguments": {}},
            {"func_name": "assert_task_status"},
        ]
    )
    assert results[0] == {"met": True, "error": None}
    assert results[1] == {"met": False, "error": None}
    assert results[2]["met"] is None
    assert results[2]["error"].startswith("ValueError: create_task is not an assertion function")
    assert results[3]["met"] is None and results[3]["error"].startswith("malformed assertion: ")
    assert not episode.lock.locked()


def test_replay_skips_reads_only_when_asked(store: EpisodeStore) -> None:
    calls = [
        ("assistant", "get_users", {}),
        ("assistant", "update_task_status", {"task_id": "task_1", "status": "completed"}),
        ("user", "no_such_tool", {}),
    ]
    writes = store.create("mock", None)
    outputs = writes.replay(calls, only_mutating=True)
    assert outputs[0] is None and outputs[2] is None
    assert outputs[1] is not None and outputs[1]["error"] is False
    assert writes.snapshot()["agent_db"]["tasks"]["task_1"]["status"] == "completed"
    every = store.create("mock", None).replay(calls, only_mutating=False)
    assert [o is not None for o in every] == [True, True, True]
    assert every[2] == {"output": "Error: Tool 'no_such_tool' not found.", "error": True}
