"""Where episodes live: the in-process server, a remote `tau-server`, or the bare engine."""

from tau_mcp.harness.backends.base import *  # noqa: F403 - the protocols, re-exported as base lists them
from tau_mcp.harness.backends.base import __all__  # noqa: F401
