"""Errors that stop a whole run (as opposed to one simulation, which is retried)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A run was asked for something it cannot do; the message says what."""
