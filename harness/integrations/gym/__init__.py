"""Gymnasium environments over tau-mcp episodes: `tau-mcp/Agent-v0` and `tau-mcp/User-v0`.

Importing this package registers both ids. The `gym` extra also declares the `gymnasium.envs`
entry point, which Gymnasium releases that load plugins (0.26 to 0.29) call on
`import gymnasium`; Gymnasium 1.x no longer loads plugins, so there either import this package
or name it in the id: `gymnasium.make("tau_mcp.harness.integrations.gym:tau-mcp/Agent-v0", ...)`.
"""

from __future__ import annotations

AGENT_ENV_ID = "tau-mcp/Agent-v0"
USER_ENV_ID = "tau-mcp/User-v0"


def register_envs() -> None:
    """Register both environments with Gymnasium (idempotent)."""
    from gymnasium.envs.registration import register, registry

    entries = {
        AGENT_ENV_ID: "tau_mcp.harness.integrations.gym.envs:AgentEnv",
        USER_ENV_ID: "tau_mcp.harness.integrations.gym.envs:UserEnv",
    }
    for env_id, entry_point in entries.items():
        if env_id not in registry:
            # Simulated users and agents are models: the same seed need not give the same
            # conversation, so the checker must not demand step-for-step determinism.
            register(id=env_id, entry_point=entry_point, nondeterministic=True)


try:
    register_envs()
except ImportError:  # gymnasium not installed: the package still imports, envs do not exist
    pass

__all__ = ["AGENT_ENV_ID", "USER_ENV_ID", "register_envs"]
