"""The benchmarks a domain can belong to (`DomainSpec.benchmark`), and what each changes in a
run: tau2-bench's domains, and the original τ-bench's (`tau-bench-retail`, `tau-bench-airline`).

A benchmark sets the defaults of the run options its domains do not share with tau2 (a run
option left unset takes its domain's benchmark's value), the names of agents and users that
mean its own strategies (`llm` on a τ-bench domain is its tool-calling agent and its llm
user), the conversation's rules (`harness.orchestrator.Rules`, `Limits.max_agent_actions`), how
pass^k is shown, and whether the tau2 leaderboard takes its results.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tau_mcp.conversation.messages import STOP
from tau_mcp.conversation.taubench_texts import (
    TauBenchTexts,
    taubench_texts,
    texts_for_domain_folder,
)
from tau_mcp.harness.config import DEFAULT_SEED, RunConfig
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, TAU2_RULES, Rules
from tau_mcp.harness.preflight import USERS_WITH_MODEL
from tau_mcp.harness.prompt_sets import MODEL_FREE_AGENTS
from tau_mcp.servers.engine.domain import Domain, DomainSpec
from tau_mcp.servers.engine.tasks import Task

TAU2 = "tau2"
TAU_BENCH = "tau-bench"


@dataclass(frozen=True)
class Benchmark:
    name: str
    #: How the benchmark is named to people ("tau2", "τ-bench").
    title: str
    #: Values of `RunConfig` fields a run leaves unset (None).
    defaults: Mapping[str, Any]
    #: Agent names that mean another agent on this benchmark's domains.
    agent_names: Mapping[str, str] = field(default_factory=dict)
    #: The agent's messages a conversation may have (None: only `max_steps` applies).
    max_agent_actions: int | None = None
    #: Whether tau2's leaderboard (`submit`, `leaderboard`) takes its results.
    leaderboard: bool = True

    def agent_name(self, name: str) -> str:
        return self.agent_names.get(name, name)

    def rules(self, domain: Domain) -> Rules:
        """How conversations on `domain` run."""
        if self.name != TAU_BENCH:
            return TAU2_RULES
        return Rules(user_opening=taubench_texts_of(domain).opening, user_stop_tokens=(STOP,))


BENCHMARKS: dict[str, Benchmark] = {
    TAU2: Benchmark(
        TAU2,
        "tau2",
        defaults={"seed": DEFAULT_SEED, "max_errors": DEFAULT_MAX_ERRORS},
    ),
    TAU_BENCH: Benchmark(
        TAU_BENCH,
        "τ-bench",
        # The original's run.py: seed 10, no tool-error limit, the user model gpt-4o with no
        # sampling arguments, the agent at temperature 0.0 (its `--model` has no default: ours
        # is the model of its published tool-calling results).
        defaults={
            "seed": 10,
            "max_errors": None,
            "agent_llm": "gpt-4o",
            "agent_llm_args": {"temperature": 0.0},
            "user_llm": "gpt-4o",
            "user_llm_args": {},
        },
        agent_names={"llm": "tool-calling"},
        max_agent_actions=30,  # the original's agents' max_num_steps
        leaderboard=False,
    ),
}


def benchmark_of(domain: Domain | DomainSpec) -> Benchmark:
    spec = domain.spec if isinstance(domain, Domain) else domain
    return BENCHMARKS.get(spec.benchmark, BENCHMARKS[TAU2])


def with_benchmark_defaults(config: RunConfig, domain: Domain) -> RunConfig:
    """The run's settings on `domain`: its benchmark's names for the agent, and its defaults
    for the options left unset. Applying it twice changes nothing."""
    benchmark = benchmark_of(domain)
    changes: dict[str, Any] = {}
    agent = benchmark.agent_name(config.agent)
    if agent != config.agent:
        changes["agent"] = agent
    # A side's model defaults only where that side calls a model (as `with_llm_defaults`): an
    # oracle run or a scripted user records no model.
    skipped = set()
    if agent in MODEL_FREE_AGENTS:
        skipped |= {"agent_llm", "agent_llm_args"}
    if config.user not in USERS_WITH_MODEL:
        skipped |= {"user_llm", "user_llm_args"}
    for name, value in benchmark.defaults.items():
        if name not in skipped and getattr(config, name) is None and value is not None:
            changes[name] = value
    return config.replace(**changes) if changes else config


def with_original_reward(
    domain: Domain, task: Task, reward_info: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A graded τ-bench simulation's reward_info with the original's beside ours
    (`original_reward_info`, as its results files hold it); unchanged on other domains."""
    if reward_info is None or benchmark_of(domain).name != TAU_BENCH:
        return reward_info
    from tau_mcp.servers.domains.tau_bench.reward import original_reward_info

    if reward_info.get("db_check") is None:  # ended early: the original computed no reward
        return {**reward_info, "original_reward_info": None}
    return {**reward_info, "original_reward_info": original_reward_info(task, reward_info)}


def taubench_texts_of(domain: Domain) -> TauBenchTexts:
    """The τ-bench texts a domain's runs use: those beside a τ-bench domain's data, else
    those of $TAUBENCH_DATA_DIR (for τ-bench strategies run on another domain)."""
    if benchmark_of(domain).name == TAU_BENCH:
        return texts_for_domain_folder(domain.folder)
    from tau_mcp.servers.domains.tau_bench.spec import LOCATION

    return taubench_texts(LOCATION.root(Path(".")))


def benchmark_named(domain: str) -> Benchmark:
    """The benchmark of a domain given by name (tau2's for a name no domain has)."""
    from tau_mcp.servers.domains.registry import domain_spec
    from tau_mcp.servers.engine.errors import EngineError

    try:
        return benchmark_of(domain_spec(domain))
    except EngineError:
        return BENCHMARKS[TAU2]


def leaderboard_refusal(domain: str | None, benchmark: str | None = None) -> str | None:
    """Why tau2's leaderboard cannot take results of this domain (or benchmark), or None."""
    found = BENCHMARKS.get(benchmark or "") or (benchmark_named(domain) if domain else None)
    if found is None or found.leaderboard:
        return None
    return (
        f"the tau2 leaderboard has no {found.title} track, so it takes no results of "
        f"'{domain or found.name}'"
    )
