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


#: The reference's names for our users (`tau2 run --user user_simulator`), taken as ours.
REFERENCE_USER_NAMES = {"user_simulator": "llm", "dummy_user": "dummy"}
#: Every way to name a user, as an unknown name is told.
USER_CHOICES = (
    f"one of {', '.join(USERS)}, a plug-in class as module:Class, or the reference's "
    f"{', '.join(REFERENCE_USER_NAMES)}"
)


def user_class(name: str) -> type[UserSimulator]:
    """A built-in user by name (ours or the reference's), or a plug-in given as
    `package.module:ClassName`."""
    return plugin_class(
        REFERENCE_USER_NAMES.get(name, name),
        USERS,
        UserSimulator,
        kind="user",
        base_label="simulator.UserSimulator",
        choices=USER_CHOICES,
    )
