"""Errors that stop a whole run (as opposed to one simulation, which is retried).

Defined in `conversation.errors`, below the grader and the simulated user, which raise them too.
"""

from __future__ import annotations

from conversation.errors import ConfigError, InfrastructureError

__all__ = ["ConfigError", "InfrastructureError"]
