"""What a run is asked to do (`RunConfig`), and the choices that follow from it alone: which
tasks it covers and the seed each trial gets."""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from tau_mcp.grading import Judge
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.review import ReviewSettings
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task

DEFAULT_SEED = 300


@dataclass
class RunConfig:
    domain: str
    agent: str = "llm"
    agent_llm: str | None = None
    #: None: the prompt set's defaults; a dict replaces them (see harness.prompt_sets).
    agent_llm_args: dict[str, Any] | None = None
    user: str = "llm"
    user_llm: str | None = None
    user_llm_args: dict[str, Any] | None = None
    task_split: str | None = "base"
    task_ids: list[str] | None = None
    num_tasks: int | None = None
    num_trials: int = 1
    max_concurrency: int = 3
    seed: int = DEFAULT_SEED
    max_steps: int = DEFAULT_MAX_STEPS
    max_errors: int = DEFAULT_MAX_ERRORS
    max_retries: int = 3
    enforce_protocol: bool = False
    retry_delay: float = 1.0
    #: Seconds of wall-clock time a simulation may take (None: no limit); past it the
    #: conversation ends with the termination 'timeout', as in the reference.
    timeout: float | None = None
    judge: Judge | None = None
    save_to: Path | None = None
    #: `--auto-review`: the reference's LLM review of each simulation as it finishes.
    review: ReviewSettings | None = None
    #: The run preset that filled options (tau_mcp.harness.presets.record), kept in the header.
    preset: dict[str, Any] | None = None
    #: A domain with retrieval configs (banking_knowledge): the config and its kwargs (None:
    #: the reference's default, alltools).
    retrieval_config: str | None = None
    retrieval_kwargs: dict[str, Any] | None = None


def select_tasks(domain: Domain, config: RunConfig) -> list[Task]:
    try:
        ids = domain.task_ids(config.task_split)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    if config.task_ids:
        unknown = [t for t in config.task_ids if t not in domain.tasks]
        if unknown:
            raise ConfigError(f"unknown task id(s) in domain '{domain.name}': {', '.join(unknown)}")
        ids = [t for t in config.task_ids]
    if config.num_tasks is not None:
        ids = ids[: config.num_tasks]
    return [domain.task(t) for t in ids]


def trial_seeds(seed: int, trials: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randint(0, 1_000_000) for _ in range(trials)]


class _SeedStream:
    """One base seed's trial seeds, drawn once, in order, and kept: trial n costs O(1) after
    the first ask that reaches it (a served run numbers trials up to 99,999, and drawing n
    seeds again on every creation made creation O(trial))."""

    __slots__ = ("draw", "lock", "seeds")

    def __init__(self, seed: int) -> None:
        self.draw = random.Random(seed).randint
        self.lock = threading.Lock()  # a draw and its append stay together across threads
        self.seeds: list[int] = []

    def get(self, trial: int) -> int:
        seeds = self.seeds
        if trial >= len(seeds):
            with self.lock:
                while len(seeds) <= trial:
                    seeds.append(self.draw(0, 1_000_000))
        return seeds[trial]


@lru_cache(maxsize=8)
def _seed_stream(seed: int) -> _SeedStream:
    return _SeedStream(seed)


def trial_seed(seed: int, trial: int) -> int:
    """The seed `tau-harness run` gives this trial (`trial_seeds(seed, trial + 1)[trial]`), for
    the callers that ask for one trial at a time (served simulations, Inspect epochs)."""
    return _seed_stream(seed).get(trial)
