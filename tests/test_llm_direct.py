"""The cheap model-call route sends what litellm's full path sends and reads replies the same way.

Every case runs twice against the recording fake server: once through `litellm.acompletion`
(`TAU_LITELLM_FULL_PATH=1`) and once through `tau_mcp.conversation.direct`; request bodies must be
equal key for key, and the resulting messages equal field for field.
"""

from __future__ import annotations

import contextlib
import copy

import pytest

from tau_mcp.conversation import direct, llm
from tau_mcp.conversation.messages import ChatMessage, ToolCall, ToolMessage
from tests.support.fake_llm_server import FakeLLMServer, call, failure, text

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_user_details",
            "description": "Look a user up.",
            "parameters": {
                "type": "object",
                "properties": {"user_id": {"type": "string", "pattern": "^[a-z_0-9]+$"}},
                "required": ["user_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_all_airports",
            "description": "All airports.",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]

CONVERSATION = [
    {"role": "system", "content": "You are an agent."},
    ChatMessage(role="assistant", content="Hi! How can I help you today?"),
    ChatMessage(role="user", content="Please look me up: mia_li_3668."),
    ChatMessage(
        role="assistant",
        tool_calls=[ToolCall(id="call_9", name="get_user_details", arguments={"user_id": "x"})],
    ),
    ToolMessage(id="call_9", content='{"name": "Mia"}'),
]

# A longer history: several tool calls and results, a raw dict message as a caller may pass one,
# non-ASCII text (accents, CJK, emoji) and floats in tool-call arguments and results.
LONG_CONVERSATION = [
    {"role": "system", "content": "Agent. Währung: €; 東京; naïve café 🙂"},
    ChatMessage(role="assistant", content="Hi! How can I help you today?"),
    ChatMessage(role="user", content="Réservation pour Zoë — 2 bags, 23.5 kg each."),
    ChatMessage(
        role="assistant",
        tool_calls=[
            ToolCall(
                id="call_1",
                name="get_user_details",
                arguments={"user_id": "zoë_1", "weight": 23.5, "tiny": 1e-7, "big": 1e16},
            )
        ],
    ),
    ToolMessage(id="call_1", content='{"name": "Zoë", "balance": 0.30000000000000004}'),
    ChatMessage(
        role="assistant",
        tool_calls=[
            ToolCall(id="call_2", name="list_all_airports", arguments={}),
            ToolCall(id="call_3", name="get_user_details", arguments={"n": [0.1, -0.0, 3]}),
        ],
    ),
    ToolMessage(id="call_2", content="[]"),
    ToolMessage(id="call_3", content="ok ✓"),
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_4",
                "type": "function",
                "function": {"name": "list_all_airports", "arguments": '{"x": 1.5e300}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_4", "content": "\u00e9 stays escaped; \\ too"},
    ChatMessage(role="assistant", content="Done. Anything else? 🛫"),
]

CASES = [
    pytest.param({"tools": TOOLS}, {}, id="tools-auto"),
    pytest.param({"tools": TOOLS, "tool_choice": "required"}, {"seed": 7}, id="tools-required"),
    pytest.param({}, {"temperature": 0.0, "seed": 626729}, id="no-tools"),
    pytest.param({"tools": TOOLS}, {"temperature": 0.5, "max_tokens": 64}, id="sampling"),
]


async def _both(
    server: FakeLLMServer, model: str, reply: dict, monkeypatch, conversation=None, **kwargs
):
    """(full-path body, full-path message, direct body, direct message) for one call."""
    out = []
    for full in (True, False):
        if full:
            monkeypatch.setenv("TAU_LITELLM_FULL_PATH", "1")
        else:
            monkeypatch.delenv("TAU_LITELLM_FULL_PATH", raising=False)
        server.script(model, reply)
        # Each route gets its own copy: litellm rewrites some message dicts in place.
        history = copy.deepcopy(conversation if conversation is not None else CONVERSATION)
        message = await llm.generate(f"openai/{model}", history, **kwargs)
        out += [server.requests[model][-1], message]
    return out


@pytest.mark.parametrize(("tool_args", "sampling"), CASES)
async def test_direct_route_sends_the_body_litellm_sends(fake, monkeypatch, tool_args, sampling):
    args = {**fake.llm_args(), **tool_args, **sampling}
    reply = call("get_user_details", user_id="mia_li_3668")
    full_body, full_msg, direct_body, direct_msg = await _both(
        fake, "fake-model", reply, monkeypatch, **args
    )
    assert direct_body == full_body
    assert direct.route_for(llm.litellm_module(), "openai/fake-model", {}, False, None)
    _same_message(full_msg, direct_msg)


LONG_CASES = [
    pytest.param({"tools": TOOLS}, {"temperature": 0.0, "seed": 626729}, id="tools"),
    pytest.param({}, {"top_p": 0.9, "presence_penalty": -0.5}, id="no-tools-float-params"),
    pytest.param({"tools": TOOLS, "tool_choice": "required"}, {"max_tokens": 64}, id="required"),
]


@pytest.mark.parametrize(("tool_args", "sampling"), LONG_CASES)
async def test_every_turn_of_a_long_conversation_sends_the_body_litellm_sends(
    fake, monkeypatch, tool_args, sampling
):
    """Turn by turn, as a conversation grows (the direct route caches the tools part)."""
    args = {**fake.llm_args(), **tool_args, **sampling}
    for turn in range(1, len(LONG_CONVERSATION) + 1):
        history = LONG_CONVERSATION[:turn]
        full_body, _, direct_body, _ = await _both(
            fake, "long-model", text("ok"), monkeypatch, history, **args
        )
        assert direct_body == full_body, f"turn {turn}"


async def test_equal_tool_lists_share_a_template_and_changed_ones_do_not(fake, monkeypatch):
    """Every simulation builds its own (equal) tool list; a changed schema must show."""
    args = fake.llm_args()
    changed = copy.deepcopy(TOOLS)
    changed[1]["function"]["description"] = "Every airport, ünïcode."
    for tools in (TOOLS, copy.deepcopy(TOOLS), changed, copy.deepcopy(TOOLS), changed):
        full_body, _, direct_body, _ = await _both(
            fake, "lists-model", text("ok"), monkeypatch, tools=tools, **args
        )
        assert direct_body == full_body
        assert (
            direct_body["tools"][1]["function"]["description"]
            == (tools[1]["function"]["description"])
        )


def test_call_shapes_that_compare_equal_in_python_get_their_own_routes():
    litellm = llm.litellm_module()
    one = direct.route_for(litellm, "openai/x", {"temperature": 1}, False, None)
    one_float = direct.route_for(litellm, "openai/x", {"temperature": 1.0}, False, None)
    assert one is not None and one_float is not None and one is not one_float
    assert one.params["temperature"] == 1 and isinstance(one_float.params["temperature"], float)
    stop = direct.route_for(litellm, "openai/x", {"stop": ["a"]}, False, None)
    assert stop is direct.route_for(litellm, "openai/x", {"stop": ["a"]}, False, None)
    assert stop is not direct.route_for(litellm, "openai/x", {"stop": ["b"]}, False, None)


async def test_direct_route_reads_text_replies_and_usage_like_litellm(fake, monkeypatch):
    _, full_msg, _, direct_msg = await _both(
        fake, "fake-model", text("All done."), monkeypatch, role="user", **fake.llm_args()
    )
    assert direct_msg.role == "user" and direct_msg.content == "All done."
    _same_message(full_msg, direct_msg)


async def test_direct_route_prices_a_known_model_as_litellm_does(fake, monkeypatch):
    model = "gpt-4.1-2025-04-14"
    full_body, full_msg, direct_body, direct_msg = await _both(
        fake, model, text("ok"), monkeypatch, **fake.llm_args()
    )
    assert direct_body == full_body
    assert full_msg.cost and full_msg.cost > 0
    assert direct_msg.cost == pytest.approx(full_msg.cost)


def test_unusual_calls_take_litellm_full_path():
    litellm = llm.litellm_module()
    schema = {"type": "json_object"}
    assert direct.route_for(litellm, "openai/x", {"response_format": schema}, False, None) is None
    assert direct.route_for(litellm, "anthropic/claude-3-5-sonnet", {}, False, None) is None
    assert direct.route_for(litellm, "openai/x", {"temperature": 0.0}, False, None) is not None


async def test_direct_route_reports_a_refused_call(fake):
    with pytest.raises(direct.ModelCallError, match="answered 500"):
        await llm.generate("openai/nothing-scripted", CONVERSATION, **fake.llm_args())


def _same_message(a: ChatMessage, b: ChatMessage) -> None:
    """Equal but for timestamps, timings and the server's running tool-call ids."""
    skip = {"timestamp", "raw_data"}
    left, right = a.model_dump(exclude=skip), b.model_dump(exclude=skip)
    for tool_call in (left.get("tool_calls") or []) + (right.get("tool_calls") or []):
        assert tool_call.pop("id").startswith("call_")
    assert left == right
    assert (a.raw_data or {}).get("model") == (b.raw_data or {}).get("model")


async def test_a_changed_base_url_in_the_environment_takes_effect(monkeypatch):
    from tests.support.fake_llm_server import FakeLLMServer

    for _ in range(2):
        with FakeLLMServer() as server:
            monkeypatch.setenv("OPENAI_API_BASE", server.api_base)
            monkeypatch.setenv("OPENAI_API_KEY", "fake-key")
            server.script("env-model", text("hello"))
            reply = await llm.generate("openai/env-model", CONVERSATION, num_retries=0)
            assert reply.content == "hello"
            assert len(server.requests["env-model"]) == 1


async def test_an_unreachable_endpoint_is_one_clear_error():
    from tests.support.fake_llm_server import _free_port

    args = {"api_base": f"http://127.0.0.1:{_free_port()}/v1", "api_key": "k", "num_retries": 0}
    with pytest.raises(direct.ModelCallError, match="cannot reach http://127.0.0.1"):
        await llm.generate("openai/nobody-home", CONVERSATION, **args)


async def test_direct_route_retries_what_retrying_can_fix_and_honours_retry_after(
    fake, monkeypatch
):
    waits = []

    def backoff(attempt: int, retry_after: str | None) -> float:
        waits.append((attempt, retry_after, original(attempt, retry_after)))
        return 0.0

    original = direct._backoff
    monkeypatch.setattr(direct, "_backoff", backoff)
    fake.script("busy-model", failure(429, **{"Retry-After": "7"}), failure(503), text("hi"))
    args = {**fake.llm_args(), "num_retries": 2}
    reply = await llm.generate("openai/busy-model", CONVERSATION, **args)
    assert reply.content == "hi" and len(fake.requests["busy-model"]) == 3
    assert waits == [(0, "7", 7.0), (1, None, 1.0)]
    bodies = fake.requests["busy-model"]
    assert bodies[0] == bodies[1] == bodies[2]
    fake.script("no-retries-model", failure(429), text("late"))
    with pytest.raises(direct.ModelCallError, match="answered 429"):
        await llm.generate("openai/no-retries-model", CONVERSATION, **fake.llm_args())
    fake.script("bad-request-model", failure(400), text("never"))
    with pytest.raises(direct.ModelCallError, match="answered 400"):
        await llm.generate("openai/bad-request-model", CONVERSATION, **args)
    assert len(fake.requests["bad-request-model"]) == 1  # a 400 is not retried


async def test_every_direct_call_passes_the_request_gate(fake):
    held = []

    @contextlib.asynccontextmanager
    async def gate(model: str):
        held.append(model)
        yield

    fake.script("gated-model", text("one"), text("two"))
    llm.set_request_gate(gate)
    try:
        for _ in range(2):
            await llm.generate("openai/gated-model", CONVERSATION, **fake.llm_args())
    finally:
        llm.set_request_gate(None)
    assert held == ["openai/gated-model"] * 2


async def test_a_reply_holding_a_lone_surrogate_is_read_like_litellm_reads_it(fake, monkeypatch):
    """Issue 31 item 8: `\\ud800` in a reply is valid JSON (the escape of a lone UTF-16
    surrogate); the cheap route called it 'non-JSON' and the simulation an infrastructure
    error. Both routes read it, and the next request carries it back."""
    said = "Half an emoji: \ud83d, then more."
    full_body, full_message, direct_body, direct_message = await _both(
        fake, "surrogate-model", text(said), monkeypatch, **fake.llm_args()
    )
    assert full_body == direct_body
    assert direct_message.content == full_message.content == said
    history = [*CONVERSATION, direct_message, ChatMessage(role="user", content="Go on.")]
    fake.script("surrogate-model", text("ok"))
    following = await llm.generate("openai/surrogate-model", history, **fake.llm_args())
    assert following.content == "ok"
    assert fake.requests["surrogate-model"][-1]["messages"][-2]["content"] == said


def test_a_reply_that_is_not_json_says_why():
    from tau_mcp.conversation import wire_json

    with pytest.raises(ValueError):
        wire_json.loads(b"<html>busy</html>")
    assert wire_json.loads(b'{"a": "\\ud800"}') == {"a": "\ud800"}
