"""Choosing a user simulator by name."""

from __future__ import annotations

from simulator.base import UserSimulator
from simulator.dummy import DummyUser
from simulator.llm_user import LLMUser
from simulator.scripted import ScriptedUser

USERS: dict[str, type[UserSimulator]] = {
    "llm": LLMUser,
    "scripted": ScriptedUser,
    "dummy": DummyUser,
}


def user_class(name: str) -> type[UserSimulator]:
    if name not in USERS:
        raise ValueError(f"unknown user '{name}' (use one of {', '.join(USERS)})")
    return USERS[name]
