"""Agents: the model-driven ones, the oracle, and loading plug-in classes by `module:Class`."""

from __future__ import annotations

from tau_mcp.conversation.plugins import plugin_class
from tau_mcp.harness.agents.base import Agent, AgentContext
from tau_mcp.harness.agents.gt_agent import GTAgent
from tau_mcp.harness.agents.llm_agent import LLMAgent, SoloAgent
from tau_mcp.harness.agents.oracle import OracleAgent, RetryingOracleAgent
from tau_mcp.harness.agents.taubench import TAU_BENCH_AGENTS

BUILTIN_AGENTS: dict[str, type[Agent]] = {
    "llm": LLMAgent,
    "solo": SoloAgent,
    "gt": GTAgent,
    "oracle": OracleAgent,
    "oracle-retry": RetryingOracleAgent,
    **TAU_BENCH_AGENTS,  # the original τ-bench's strategies: tool-calling, act, react, few-shot
}


#: The reference's names for our agents (`tau2 run --agent llm_agent`), taken as ours.
REFERENCE_AGENT_NAMES = {"llm_agent": "llm", "llm_agent_gt": "gt", "llm_agent_solo": "solo"}
#: Every way to name an agent, as an unknown name is told.
AGENT_CHOICES = (
    f"one of {', '.join(BUILTIN_AGENTS)}, cmd (a program, with --agent-cmd), a plug-in class as "
    f"module:Class, or the reference's {', '.join(REFERENCE_AGENT_NAMES)}"
)


def agent_class(name: str) -> type[Agent]:
    """A built-in agent by name (ours or the reference's), or a plug-in given as
    `package.module:ClassName`."""
    return plugin_class(
        REFERENCE_AGENT_NAMES.get(name, name),
        BUILTIN_AGENTS,
        Agent,
        kind="agent",
        base_label="tau_mcp.harness.agents.Agent",
        search_cwd=True,  # console scripts do not look in the working directory
        choices=AGENT_CHOICES,
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
