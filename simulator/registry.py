"""Choosing a user simulator by name."""

from __future__ import annotations

from tau_mcp.conversation.plugins import plugin_class
from tau_mcp.simulator.base import UserSimulator
from tau_mcp.simulator.dummy import DummyUser
from tau_mcp.simulator.llm_user import LLMUser
from tau_mcp.simulator.scripted import ScriptedUser
from tau_mcp.simulator.taubench import TAU_BENCH_USERS

USERS: dict[str, type[UserSimulator]] = {
    "llm": LLMUser,
    "scripted": ScriptedUser,
    "dummy": DummyUser,
    # the original τ-bench's strategies (its `llm` is `llm` on its own domains)
    **{name: cls for name, cls in TAU_BENCH_USERS.items() if name != "llm"},
}
#: Names that mean another user on the domains of a benchmark (`DomainSpec.benchmark`).
BENCHMARK_USERS: dict[str, dict[str, type[UserSimulator]]] = {"tau-bench": TAU_BENCH_USERS}


#: The reference's names for our users (`tau2 run --user user_simulator`), taken as ours.
REFERENCE_USER_NAMES = {"user_simulator": "llm", "dummy_user": "dummy"}
#: Every way to name a user, as an unknown name is told.
USER_CHOICES = (
    f"one of {', '.join(USERS)}, a plug-in class as module:Class, or the reference's "
    f"{', '.join(REFERENCE_USER_NAMES)}"
)


def user_class(name: str, benchmark: str = "tau2") -> type[UserSimulator]:
    """A built-in user by name (ours, the reference's, or as the domain's benchmark names its
    users), or a plug-in given as `package.module:ClassName`."""
    builtins = {**USERS, **BENCHMARK_USERS.get(benchmark, {})}
    return plugin_class(
        REFERENCE_USER_NAMES.get(name, name),
        builtins,
        UserSimulator,
        kind="user",
        base_label="simulator.UserSimulator",
        choices=USER_CHOICES,
    )
