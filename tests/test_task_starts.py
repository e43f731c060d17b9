"""Episodes started from a cached task start are the episodes a fresh setup gives, and are
independent of each other and of the cache."""

from __future__ import annotations

import pytest

from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.data import DEMO_DIR
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.tasks import Task
from tests.support import conformance as conf

TELECOM_DIR = conf.DATA_DIR / "tau2" / "domains" / "telecom"


@pytest.fixture(scope="module")
def telecom() -> Domain:
    return load_domains(["telecom"], conf.DATA_DIR)["telecom"]


def _vpn_shared_with_phone(episode: Episode) -> bool:
    """Does the phone hold its toolkit's VPN profile object (connected, or broken by setup)?"""
    return episode.user_db.device.vpn_details is episode.user_tools.default_vpn_details  # type: ignore[union-attr]


def _same_episode_state(got: Episode, want: Episode) -> None:
    assert got.snapshot() == want.snapshot()
    assert got.hashes() == want.hashes()
    assert (got.calls, got._minted) == (want.calls, want._minted)
    assert (got.user_db is got.agent_db) == (want.user_db is want.agent_db)
    if got.user_tools is not None and hasattr(got.user_tools, "default_vpn_details"):
        assert _vpn_shared_with_phone(got) == _vpn_shared_with_phone(want)


@pytest.mark.needs_data("telecom")
def test_every_telecom_task_starts_as_a_fresh_setup_would(telecom: Domain) -> None:
    tasks = [telecom.task(task_id) for task_id in telecom.task_ids(None)]
    assert len(tasks) > 2000
    for task in tasks:
        fresh = Episode(telecom, "fresh", task, use_start_cache=False)
        first = Episode(telecom, "first", task)  # sets up, then caches
        copy = Episode(telecom, "copy", task)  # from the cache
        assert telecom.starts.get(task) is not None, task.id
        assert first.snapshot() == fresh.snapshot(), task.id
        _same_episode_state(copy, fresh)
        assert copy.mint_id("bill") == fresh.mint_id("bill")


@pytest.mark.needs_data("telecom")
def test_copies_are_independent_of_each_other_and_of_the_cache(telecom: Domain) -> None:
    task = next(telecom.task(t) for t in telecom.task_ids(None) if "bad_vpn" in t)
    first, second = Episode(telecom, "a", task), Episode(telecom, "b", task)
    pristine = Episode(telecom, "p", task, use_start_cache=False).snapshot()
    # Nothing mutable is shared between copies; the loaded bases are.
    assert first.user_tools.default_vpn_details is not second.user_tools.default_vpn_details  # type: ignore[union-attr]
    assert first.user_db.device is not second.user_db.device  # type: ignore[union-attr]
    assert first.agent_db.base is second.agent_db.base is telecom.base
    assert first.agent_tools.episode is first and second.user_tools.episode is second  # type: ignore[union-attr]
    assert first.user_tools.db is first.user_db  # type: ignore[union-attr]

    for side, name, arguments in [
        ("user", "toggle_airplane_mode", {}),
        ("user", "break_vpn", {}),
        ("agent", "refuel_data", {"customer_id": "C1002", "line_id": "L1006", "gb_amount": 2}),
        ("agent", "suspend_line", {"customer_id": "C1001", "line_id": "L1002", "reason": "x"}),
    ]:
        first.call(side, name, arguments)  # type: ignore[arg-type]
    assert first.snapshot() != pristine
    assert second.snapshot() == pristine
    assert Episode(telecom, "c", task).snapshot() == pristine
    assert second.mint_id("bill") == Episode(telecom, "d", task).mint_id("bill")


@pytest.mark.needs_data("telecom")
def test_starts_are_small_and_do_not_carry_the_base(telecom: Domain) -> None:
    task = telecom.task(telecom.task_ids("base")[0])
    Episode(telecom, "x", task)
    start = telecom.starts.get(task)
    assert start is not None and len(start) < 50_000


@pytest.mark.needs_data("telecom")
def test_a_different_task_object_with_the_same_id_is_set_up_afresh(telecom: Domain) -> None:
    task = telecom.task(telecom.task_ids("base")[0])
    Episode(telecom, "x", task)
    lookalike = Task.model_validate({**task.model_dump(), "initial_state": None})
    assert telecom.starts.get(lookalike) is None
    episode = Episode(telecom, "y", lookalike)
    assert episode.snapshot() == Episode(telecom, "z", None).snapshot()


def test_initialization_data_sharing_one_database_survives_the_cache() -> None:
    mock = load_domains(["mock"], DEMO_DIR)["mock"]
    task = Task.model_validate(
        {
            "id": "init_data",
            "initial_state": {
                "initialization_data": {"agent_data": {"tasks": {"task_1": {"title": "Set up"}}}}
            },
        }
    )
    fresh = Episode(mock, "fresh", task, use_start_cache=False)
    Episode(mock, "first", task)
    copy = Episode(mock, "copy", task)
    _same_episode_state(copy, fresh)
    assert copy.user_db is copy.agent_db and copy.user_tools.db is copy.agent_db  # type: ignore[union-attr]
    assert copy.agent_db.tasks["task_1"].title == "Set up"
    copy.call("agent", "update_task_status", {"task_id": "task_1", "status": "completed"})
    assert Episode(mock, "again", task).snapshot() == fresh.snapshot()


def test_history_replay_is_cached_too() -> None:
    mock = load_domains(["mock"], DEMO_DIR)["mock"]
    task = mock.task("demo_history")
    fresh = Episode(mock, "fresh", task, use_start_cache=False)
    Episode(mock, "first", task)
    assert mock.starts.get(task) is not None
    _same_episode_state(Episode(mock, "copy", task), fresh)
