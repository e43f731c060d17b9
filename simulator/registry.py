"""Choosing a user simulator by name."""

from __future__ import annotations

from tau_mcp.conversation.plugins import plugin_class
from tau_mcp.simulator.base import UserSimulator
from tau_mcp.simulator.dummy import DummyUser
from tau_mcp.simulator.llm_user import LLMUser
from tau_mcp.simulator.scripted import ScriptedUser

USERS: dict[str, type[UserSimulator]] = {
    "llm": LLMUser,
    "scripted": ScriptedUser,
    "dummy": DummyUser,
}


def user_class(name: str) -> type[UserSimulator]:
    """A built-in user by name, or a plug-in given as `package.module:ClassName`."""
    return plugin_class(
        name, USERS, UserSimulator, kind="user", base_label="simulator.UserSimulator"
    )
