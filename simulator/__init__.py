"""User simulators: a model-driven user, a scripted user that needs no model, and the dummy
user of solo runs."""

from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.registry import USERS, user_class

__all__ = ["UserContext", "UserSimulator", "USERS", "user_class"]
