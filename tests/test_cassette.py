"""Issue 33, item 1: a request's key and stored form, made once per call (`cassette.prepare`).

The key must be the same for the same request however it is built (the same tool list object
turn after turn, or an equal copy), differ when anything that shapes the answer differs, read a
search tool's timing note as constant, and leave out transport and secret arguments; what is
written (blobs, lanes) carries no secret in any JSON form.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_mcp.conversation import cassette
from tau_mcp.harness import cassettes, redaction

TOOLS = [{"type": "function", "function": {"name": "get_user", "parameters": {}}}]


def _request(messages, tools=TOOLS, **args):
    return cassette.request_of("chat", "openai/m", messages=messages, tools=tools, args=args)


def test_the_key_depends_on_content_not_on_objects_or_transport():
    messages = [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"}]
    digests = cassette._Digests()
    first = cassette.prepare(_request(messages, temperature=0), digests)
    again = cassette.prepare(_request(json.loads(json.dumps(messages)), temperature=0), digests)
    copied_tools = cassette.prepare(
        _request(messages, tools=json.loads(json.dumps(TOOLS)), temperature=0), digests
    )
    elsewhere = cassette.prepare(
        _request(messages, temperature=0, api_base="http://other", api_key="k", timeout=3)
    )
    assert first.key == again.key == copied_tools.key == elsewhere.key
    assert cassette.key_of(_request(messages, temperature=0)) == first.key

    changed = [
        _request([*messages[:1], {"role": "user", "content": "hello"}], temperature=0),
        _request(messages, temperature=1),
        _request(messages, tools=[], temperature=0),
        _request(messages, tools=[{**TOOLS[0], "type": "other"}], temperature=0),
        _request(list(reversed(messages)), temperature=0),
        cassette.request_of("chat", "openai/n", messages=messages, tools=TOOLS, args={}),
    ]
    keys = {cassette.prepare(r, digests).key for r in changed}
    assert first.key not in keys and len(keys) == len(changed)


def test_a_tool_list_changed_under_the_same_name_is_not_taken_from_memory():
    digests = cassette._Digests()
    tools = [dict(TOOLS[0])]
    one = cassette.prepare(_request([{"role": "user", "content": "x"}], tools=tools), digests)
    other = [{"type": "function", "function": {"name": "cancel", "parameters": {}}}]
    two = cassette.prepare(_request([{"role": "user", "content": "x"}], tools=other), digests)
    assert one.key != two.key
    assert one.stored["tools"] != two.stored["tools"]
    # The remembered list gives its blob to every request that uses it (each writes its blobs).
    three = cassette.prepare(_request([{"role": "user", "content": "y"}], tools=tools), digests)
    assert three.stored["tools"] == one.stored["tools"]
    assert one.stored["tools"]["$blob"] in three.blobs


def test_a_search_tools_timing_note_is_read_as_constant_but_stored_as_it_was():
    def tool_result(ms: int) -> list[dict]:
        note = f"[Timing: retrieval={ms}ms, reranking=0ms, total={ms}ms]"
        return [{"role": "tool", "content": f"doc 1\n{note}"}]

    one, two = (
        cassette.prepare(_request(tool_result(3))),
        cassette.prepare(_request(tool_result(7))),
    )
    assert one.key == two.key
    (blob_one,) = [t for t in one.blobs.values() if "doc 1" in t]
    assert "retrieval=3ms" in blob_one  # the blob keeps what the model was sent
    assert one.stored["messages"] != two.stored["messages"]


def test_stored_requests_refer_to_blobs_that_resolve_to_the_request(tmp_path: Path):
    tape = cassette.Cassette(record=tmp_path / "tape")
    messages = [{"role": "user", "content": "héllo"}]
    prepared = cassette.prepare(_request(messages, temperature=0))
    tape.write_blobs(prepared.blobs)
    reader = cassette.Cassette(replay=tmp_path / "tape")
    assert reader.resolve(prepared.stored) == prepared.request
    assert prepared.stored["messages"] == [
        {"$blob": cassette._sha(cassette.canonical_json(m))} for m in messages
    ]


@pytest.mark.parametrize("secret", ["sk-plain-0123456789", 'sk-"quoted"\\slash-é'])
def test_every_json_text_written_is_redacted_in_its_escaped_form(secret, monkeypatch):
    monkeypatch.setattr(redaction, "_remembered", {secret})
    line = json.dumps({"content": f"Incorrect API key provided: {secret}"}, ensure_ascii=False)
    blob = cassette.canonical_json({"arguments": json.dumps({"key": secret})})  # twice escaped
    for text in (line, blob):
        (redacted,) = cassettes.redact_json_texts([text])
        assert not redaction.leaks(redacted, [secret]), redacted
        assert "quoted" not in redacted and "0123456789" not in redacted, redacted
        assert redaction.REDACTED in redacted
        json.loads(redacted)  # still JSON
