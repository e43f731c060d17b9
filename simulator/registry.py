"""Choosing a user simulator by name."""

from __future__ import annotations

import importlib

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
    """A built-in user by name, or a plug-in given as `package.module:ClassName`."""
    if name in USERS:
        return USERS[name]
    if ":" not in name:
        raise ValueError(f"unknown user '{name}' (use one of {', '.join(USERS)} or module:Class)")
    module_name, _, class_name = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import user module '{module_name}': {exc}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not issubclass(cls, UserSimulator):
        raise ValueError(f"'{name}' is not a subclass of simulator.UserSimulator")
    return cls
