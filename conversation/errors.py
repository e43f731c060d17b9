"""The two ways a simulation can fail without being scored, shared by every layer above.

`ConfigError` stops a whole run (it was asked for something it cannot do); `InfrastructureError`
fails one simulation (a server or a model provider failed), which is retried and never scored.
They live here, below the grader, the simulated user and the harness, so each of them can raise
and tell them apart without importing the others.
"""

from __future__ import annotations


class ConfigError(ValueError):
    """A run was asked for something it cannot do; the message says what."""


class InfrastructureError(RuntimeError):
    """The server or a model provider failed; the simulation is retried, never scored."""


class ParticipantFailed(RuntimeError):
    """A participant's own rules failed on a reply its model gave (the original τ-bench's
    strategies crash on a reply they cannot parse): the conversation ends with that side's
    error and scores 0, as the original records such a run; never retried."""
