"""A shared base record's result text is made once (`BaseState.record_text`) and is always the
text `render_result` makes; an episode's own copy of a record is rendered afresh every time."""

from __future__ import annotations

import json

import pytest

from tau_mcp.servers.engine.episode import Episode
from tau_mcp.servers.engine.render import render_result
from tests.support.harness import load

DOMAINS = ["mock", "airline", "retail", "telecom"]


def _domain(name: str):
    if name == "mock":
        from tests.support.data import DEMO_DIR

        return load("mock", DEMO_DIR)
    from tests.support.harness import domain_available

    reason = domain_available(name)
    if reason is not None:
        pytest.skip(reason)
    return load(name)


@pytest.mark.parametrize("name", DOMAINS)
def test_every_base_records_text_is_render_results(name: str) -> None:
    domain = _domain(name)
    checked = 0
    for base in (domain.base, domain.user_base):
        if base is None:
            continue
        for table in (*base.dict_fields, *base.nested_tables):
            for record in list(base.records(table).values())[:200]:
                text = base.record_text(record, render_result)
                if text is None:  # not a model: never rendered through the memo
                    continue
                assert text == render_result(record)
                assert base.record_text(record, render_result) is text  # made once
                checked += 1
            sample = next(iter(base.records(table).values()), None)
            if hasattr(sample, "model_copy"):  # an episode's own copy of a record
                assert base.record_text(sample.model_copy(deep=True), render_result) is None
    tables = [
        table
        for base in (domain.base, domain.user_base)
        if base is not None
        for table in (*base.dict_fields, *base.nested_tables)
    ]
    assert checked > 0 or not tables  # telecom keeps its records in lists: nothing to memo


def test_an_episodes_own_copy_is_rendered_afresh_and_others_keep_the_base() -> None:
    domain = _domain("airline")
    first = Episode(domain, "first", None)
    second = Episode(domain, "second", None)

    def status(episode: Episode) -> str:
        outcome = episode.call("agent", "get_reservation_details", {"reservation_id": "4WQ150"})
        assert not outcome.error, outcome.text
        return json.loads(outcome.text)["status"]

    before = status(first)
    assert before != "cancelled"
    cancelled = first.call("agent", "cancel_reservation", {"reservation_id": "4WQ150"})
    assert not cancelled.error, cancelled.text
    assert status(first) == "cancelled"
    assert status(second) == before
    assert status(Episode(domain, "third", None)) == before


def test_past_the_cap_a_record_is_rendered_and_not_kept(monkeypatch) -> None:
    from tau_mcp.servers.engine import cow

    domain = _domain("mock")
    base = domain.base
    records = [r for t in base.dict_fields for r in base.records(t).values()]
    if not records:
        pytest.skip("the demo data has no table of records")
    monkeypatch.setattr(cow, "RECORD_TEXTS_MAX_CHARS", 0)
    first = base.record_text(records[0], render_result)
    assert first == render_result(records[0])
    assert base.record_text(records[0], render_result) is not first  # made again, not kept
