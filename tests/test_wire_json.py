"""Request bodies encoded by `tau_mcp.conversation.wire_json` decode to the values `json` would send."""

from __future__ import annotations

import json

import pytest

from tau_mcp.conversation import wire_json

VALUES = [
    pytest.param({"content": 'Zoë, 東京, 🙂, \u00e9, \\u00e9, "quoted", \n\t'}, id="non-ascii"),
    pytest.param(
        [0.1, 0.30000000000000004, 1e16, 1e-7, -0.0, 5e-324, 1.7976931348623157e308], id="floats"
    ),
    pytest.param({"n": 2**63 - 1, "neg": -(2**63), "t": True, "f": False, "z": None}, id="ints"),
    pytest.param({"big": 2**70}, id="int-past-64-bits"),
    pytest.param({"lone": "\ud800 surrogate"}, id="lone-surrogate"),
    pytest.param({1: "int key", "s": "str key"}, id="int-key"),
]


@pytest.mark.parametrize("value", VALUES)
def test_dumps_decodes_to_what_json_sends(value):
    assert json.loads(wire_json.dumps(value)) == json.loads(json.dumps(value))


def test_floats_round_trip_exactly():
    floats = [0.1, 1 / 3, 2.5e-308, 123456789.123456789, 1e22, 1e21, 9007199254740993.0, -0.0]
    assert [repr(x) for x in json.loads(wire_json.dumps(floats))] == [repr(x) for x in floats]


def test_loads_rejects_non_json_with_value_error():
    with pytest.raises(ValueError):
        wire_json.loads(b"<html>")
    assert wire_json.loads(b'{"a": [1, 2.5, "\\u00e9"]}') == {"a": [1, 2.5, "é"]}


def test_a_template_renders_the_body_in_its_own_key_order():
    body = {"model": "m", "messages": [], "temperature": 0.0, "tools": [{"x": "é"}], "seed": 1}
    messages = [{"role": "user", "content": "Zoë 🙂"}]
    rendered = wire_json.template(body).render(messages)
    decoded = json.loads(rendered)
    assert decoded == {**body, "messages": messages}
    assert list(decoded) == list(body)


def test_a_body_that_holds_the_placeholder_elsewhere_is_encoded_whole():
    body = {"model": "m", "messages": [], "user": wire_json._PLACEHOLDER}
    messages = [{"role": "user", "content": wire_json._PLACEHOLDER}]
    template = wire_json.template(body)
    assert template.whole is not None
    assert json.loads(template.render(messages)) == {**body, "messages": messages}
