"""Reading a policy's action as a message, and showing the conversation as observation text."""

from __future__ import annotations

import pytest

from tau_mcp.conversation.messages import ChatMessage, ToolCall, ToolMessage
from tau_mcp.harness.integrations.actions import (
    ActionError,
    function_style,
    observation_text,
    parse_action,
)


def only_call(message: ChatMessage) -> ToolCall:
    assert message.content is None and message.tool_calls and len(message.tool_calls) == 1
    return message.tool_calls[0]


def test_plain_text_is_a_message():
    message = parse_action("Hello, how can I help?")
    assert (message.role, message.content, message.tool_calls) == (
        "assistant",
        "Hello, how can I help?",
        None,
    )


def test_function_style_calls_with_literal_arguments():
    call = only_call(
        parse_action(
            "book(user_id='mia', n=2, price=-3.5, ok=True, none=None, "
            "flights=[{'flight_number': 'HAT1', 'date': '2024-05-20'}], pair=(1, 2))"
        )
    )
    assert call.name == "book" and call.requestor == "assistant" and call.id
    assert call.arguments == {
        "user_id": "mia",
        "n": 2,
        "price": -3.5,
        "ok": True,
        "none": None,
        "flights": [{"flight_number": "HAT1", "date": "2024-05-20"}],
        "pair": [1, 2],
    }
    assert only_call(parse_action("get_users()")).arguments == {}


def test_function_style_round_trips():
    call = ToolCall(name="f", arguments={"a": "it's", "b": [1, {"c": None}], "d": 1.5})
    assert only_call(parse_action(function_style(call))).arguments == call.arguments


KNOWN = {"get_users", "create_task", "done"}


@pytest.mark.parametrize(
    "action",
    [
        "__import__('os').system('rm -rf /')",
        "os.system(cmd='ls')",
        "f(x=__import__('os'))",
        "f(x=open('/etc/passwd').read())",
        "f(**{'a': 1})",
        "Sure (happy to help)",
        "done() and more",
    ],
)
def test_anything_else_that_looks_like_code_is_text(action: str):
    message = parse_action(action, known_tools=KNOWN)
    assert message.content == action and message.tool_calls is None


@pytest.mark.parametrize(
    "action, reason",
    [
        ("get_users(1)", "by name"),
        ("create_task(title=open('/etc/passwd').read())", "must be a literal"),
        ("create_task(**{'title': 'x'})", "not allowed"),
        ("create_task(tags={1, 2})", "not a JSON value"),
    ],
)
def test_a_known_tool_called_wrongly_is_refused_never_run(action: str, reason: str):
    with pytest.raises(ActionError, match=reason):
        parse_action(action, known_tools=KNOWN)


def test_json_tool_calls():
    call = only_call(parse_action('{"name": "get_user", "arguments": {"user_id": "u1"}}'))
    assert (call.name, call.arguments) == ("get_user", {"user_id": "u1"})
    assert only_call(parse_action('{"name": "get_users"}')).arguments == {}
    openai_style = '{"function": {"name": "get_user", "arguments": "{\\"user_id\\": \\"u2\\"}"}}'
    assert only_call(parse_action(openai_style)).arguments == {"user_id": "u2"}
    with pytest.raises(ActionError, match="must be a JSON object"):
        parse_action('{"name": "x", "arguments": [1]}')
    with pytest.raises(ActionError, match="needs a"):
        parse_action('{"order": 5}')


def test_user_side_calls_carry_the_user_requestor():
    message = parse_action("toggle_data()", requestor="user")
    assert message.role == "user" and only_call(message).requestor == "user"


def test_openai_message_dicts():
    message = parse_action(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "get_user", "arguments": '{"user_id": "u1"}'},
                },
                {"id": "call_10", "function": {"name": "get_users", "arguments": {}}},
            ],
        }
    )
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_9", "get_user", {"user_id": "u1"}),
        ("call_10", "get_users", {}),
    ]
    assert parse_action({"role": "assistant", "content": "hi"}).content == "hi"
    assert only_call(parse_action({"name": "get_users", "arguments": {}})).name == "get_users"


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("", "empty"),
        ("   \n", "empty"),
        (None, "not NoneType"),
        ({"role": "assistant", "content": "  "}, "neither text nor tool calls"),
        ({"tool_calls": [{"function": {"name": "f", "arguments": "{nope"}}]}, "not valid JSON"),
        ({"tool_calls": [{"function": {"arguments": "{}"}}]}, "needs a non-empty string"),
        ({"content": 5}, "must be a string"),
    ],
)
def test_unreadable_actions_are_refused(bad, reason: str):
    with pytest.raises(ActionError, match=reason):
        parse_action(bad)


def test_observation_lines():
    messages = [
        ChatMessage(role="assistant", content="Hi! How can I help you today?"),
        ChatMessage(role="user", content="Create a task."),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(id="1", name="create_task", arguments={"title": "x"})],
        ),
        ToolMessage(id="1", content='{"task_id": "task_2"}'),
    ]
    assert observation_text(messages, "assistant") == 'tool: {"task_id": "task_2"}'
    assert observation_text(messages, "user") == (
        'assistant: create_task(title=\'x\')\ntool: {"task_id": "task_2"}'
    )
    assert observation_text(messages, "assistant", full=True).splitlines() == [
        "assistant: Hi! How can I help you today?",
        "user: Create a task.",
        "assistant: create_task(title='x')",
        'tool: {"task_id": "task_2"}',
    ]
