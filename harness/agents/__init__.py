"""Agents: the model-driven ones, the oracle, and loading plug-in classes by `module:Class`."""

from __future__ import annotations

import importlib
import os
import sys

from harness.agents.base import Agent, AgentContext
from harness.agents.gt_agent import GTAgent
from harness.agents.llm_agent import LLMAgent, SoloAgent
from harness.agents.oracle import OracleAgent

BUILTIN_AGENTS: dict[str, type[Agent]] = {
    "llm": LLMAgent,
    "solo": SoloAgent,
    "gt": GTAgent,
    "oracle": OracleAgent,
}


def agent_class(name: str) -> type[Agent]:
    """A built-in agent by name, or a plug-in given as `package.module:ClassName`."""
    if name in BUILTIN_AGENTS:
        return BUILTIN_AGENTS[name]
    if ":" not in name:
        raise ValueError(
            f"unknown agent '{name}' (use one of {', '.join(BUILTIN_AGENTS)} or module:Class)"
        )
    module_name, _, class_name = name.partition(":")
    if os.getcwd() not in sys.path:  # console scripts do not look in the working directory
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import agent module '{module_name}': {exc}") from None
    cls = getattr(module, class_name, None)
    if not isinstance(cls, type) or not issubclass(cls, Agent):
        raise ValueError(f"'{name}' is not a subclass of harness.agents.Agent")
    return cls


__all__ = [
    "Agent",
    "AgentContext",
    "agent_class",
    "LLMAgent",
    "SoloAgent",
    "GTAgent",
    "OracleAgent",
]
