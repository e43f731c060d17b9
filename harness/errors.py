"""Errors that stop a whole run (as opposed to one simulation, which is retried).

Defined in `tau_mcp.conversation.errors`, below the grader and the simulated user, which raise them too.
"""

from __future__ import annotations

from tau_mcp.conversation.errors import ConfigError, InfrastructureError

__all__ = ["ConfigError", "InfrastructureError", "ServerGone", "run_stop"]


class ServerGone(ConfigError):
    """The tau-server the run talks to stopped accepting connections and did not come back
    within `tau_mcp.harness.backends.exchange.DEAD_SERVER_S`: every further simulation would only burn
    its retries on it, so the run stops (its results file stays resumable)."""


_STOPS: dict[str, type[ConfigError]] = {"ServerGone": ServerGone}


def run_stop(kind: str | None, message: str) -> ConfigError:
    """The run-stopping error a worker process or actor reported by class name, rebuilt on the
    driver's side (so it keeps its class, and the driver its handling)."""
    return _STOPS.get(kind or "", ConfigError)(message)
