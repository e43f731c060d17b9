"""Issue 31 item 14: in `tau-harness play`, the scripted user is a customer to talk to. It
speaks in the first person (the scenario turned into what a customer would say, never its
instructions to a simulator) and stays for a few turns, while `run`'s scripted user keeps its
one-line behaviour (oracle runs and the demo depend on it)."""

from __future__ import annotations

import pytest

from tau_mcp.conversation.messages import STOP, ChatMessage
from tau_mcp.harness.play.game import play_config
from tau_mcp.simulator import UserContext, user_class
from tau_mcp.simulator.scenario import reason_for_call
from tau_mcp.simulator.scripted import ScriptedUser
from tau_mcp.simulator.voice import first_person
from tests.support.data import DEMO_DIR
from tests.support.harness import load

GREETING = "Hi! How can I help you today?"


def _played_user(domain, task_id: str):
    config = play_config("agent", "scripted", domain=domain.name, task_ids=[task_id])
    task = domain.tasks[task_id]
    return user_class(config.user)(
        UserContext(task=task, domain=domain.name, guidelines=None, tools=[])
    )


def _says(text: str) -> ChatMessage:
    return ChatMessage(role="assistant", content=text)


@pytest.mark.parametrize(
    ("second", "first"),
    [
        ("You want to cancel reservation EHGLP3.", "I want to cancel reservation EHGLP3."),
        (
            "You are Emma Kim.\nYour user id is emma_kim_9957.",
            "I am Emma Kim.\nMy user id is emma_kim_9957.",
        ),
        (
            "It is ok because you were out of town for that time.",
            "It is ok because I was out of town for that time.",
        ),
        (
            "You're pretty sure that you're a Gold member.",
            "I'm pretty sure that I'm a Gold member.",
        ),
        (
            "A representative told you that you didn't need it.",
            "A representative told me that I didn't need it.",
        ),
        ("You aren't sure; yours is the blue one.", "I'm not sure; mine is the blue one."),
        (
            "You think that you've added insurance to your flight.",
            "I think that I've added insurance to my flight.",
        ),
        ("You name is Amelia.", "My name is Amelia."),
        ("Explain what attracted you clearly.", "Explain what attracted me clearly."),
        ('Say "I need you to check it" if asked.', 'Say "I need you to check it" if asked.'),
    ],
)
def test_first_person(second, first):
    assert first_person(second) == first


async def test_the_played_scripted_customer_speaks_as_the_customer_and_stays():
    domain = load("mock", DEMO_DIR)
    user = _played_user(domain, "demo_create")
    opening = (await user.respond(_says(GREETING))).content or ""
    assert "I want a new to-do item titled 'Book flights to Lagos' on my list" in opening
    assert "I am Chidi Okafor" in opening
    for second_person in ("You ", "you ", "your ", "end the chat", "the agent"):
        assert second_person not in opening, opening
    # It does not hang up on the agent's first words, nor the next ones.
    for text in ("Let me look into that.", "I am creating it now."):
        reply = (await user.respond(_says(text))).content or ""
        assert reply and STOP not in reply, reply
    closing = (await user.respond(_says("Done. Is there anything else I can help with?"))).content
    assert closing is not None and closing.endswith(STOP)


async def test_the_played_scripted_customer_tells_what_it_knows_then_leaves_in_time():
    from tests.support.data import missing

    if missing("airline"):
        pytest.skip(missing("airline"))
    domain = load("airline")
    user = _played_user(domain, "0")
    opening = (await user.respond(_says(GREETING))).content or ""
    assert opening.startswith("Hi") and "I want to cancel reservation EHGLP3" in opening
    assert "I was out of town" in opening
    details = (await user.respond(_says("Can I have your user id?"))).content or ""
    assert "I am Emma Kim" in details and "My user id is emma_kim_9957" in details
    said = [details]
    for _ in range(6):  # an agent that never asks "anything else"
        said.append((await user.respond(_says("One moment please."))).content or "")
        if STOP in said[-1]:
            break
    assert said[-1].endswith(STOP) and 2 <= len(said) <= 5, said
    assert not any(line.startswith(("If ", "You ")) for line in said)


async def test_run_s_scripted_user_is_unchanged():
    domain = load("mock", DEMO_DIR)
    task = domain.tasks["demo_create"]
    user = user_class("scripted")(UserContext(task=task, domain="mock", guidelines=None, tools=[]))
    assert isinstance(user, ScriptedUser) and type(user) is ScriptedUser
    assert (await user.respond(_says(GREETING))).content == reason_for_call(task.user_scenario)
    assert (await user.respond(_says("Done."))).content == f"Thanks, that is all. {STOP}"
