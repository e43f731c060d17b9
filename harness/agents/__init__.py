"""Agents: the model-driven ones, the oracle, and loading plug-in classes by `module:Class`."""

from __future__ import annotations

from tau_mcp.conversation.plugins import plugin_class
from tau_mcp.harness.agents.base import Agent, AgentContext
from tau_mcp.harness.agents.gt_agent import GTAgent
from tau_mcp.harness.agents.llm_agent import LLMAgent, SoloAgent
from tau_mcp.harness.agents.oracle import OracleAgent, RetryingOracleAgent

BUILTIN_AGENTS: dict[str, type[Agent]] = {
    "llm": LLMAgent,
    "solo": SoloAgent,
    "gt": GTAgent,
    "oracle": OracleAgent,
    "oracle-retry": RetryingOracleAgent,
}


def agent_class(name: str) -> type[Agent]:
    """A built-in agent by name, or a plug-in given as `package.module:ClassName`."""
    return plugin_class(
        name,
        BUILTIN_AGENTS,
        Agent,
        kind="agent",
        base_label="tau_mcp.harness.agents.Agent",
        search_cwd=True,  # console scripts do not look in the working directory
    )


__all__ = [
    "Agent",
    "AgentContext",
    "agent_class",
    "LLMAgent",
    "SoloAgent",
    "GTAgent",
    "OracleAgent",
    "RetryingOracleAgent",
]
