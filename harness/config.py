"""What a run is (`RunConfig`), and the choices that follow from it alone: which tasks it
covers and the seed each trial gets.

`RunConfig` is the one description of a run every way in shares: `tau-harness run` reads its
options into one, `tau_mcp.run(config)` runs one (`tau_mcp.harness.api`), and `tau-harness
serve`, `play`, `export`, the Gymnasium, verifiers and Inspect integrations validate their
keyword arguments into one, so an option means the same thing, and is checked the same way,
everywhere. A bad value is refused as it is built, in one sentence (`ConfigError`).
"""

from __future__ import annotations

import difflib
import os
import random
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from tau_mcp.grading import Judge
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.review import ReviewSettings
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task

DEFAULT_SEED = 300

#: What `judge_llm` values switch the NL-assertion judge off.
NO_JUDGE = frozenset({"none", "off", "no", ""})


def build_judge(model: str | None, llm_args: dict[str, Any] | None = None) -> Judge | None:
    """The NL-assertion judge: None when `model` switches judging off ('none', 'off'...); model
    None is the default judge model (the reference texts', else ours). `llm_args` are laid over
    the judge's default arguments."""
    if model is not None and model.strip().lower() in NO_JUDGE:
        return None
    return Judge(model, dict(llm_args or {}))


def split_ids(values: Any) -> list[str] | None:
    """Task ids given as a list, or as one space- or comma-separated text (a number counts as
    one id: Inspect reads `-T task_ids=7` as 7); None or nothing given is None."""
    if values is None:
        return None
    items = list(values) if isinstance(values, list | tuple) else [values]
    ids = [part for value in items for part in str(value).replace(",", " ").split() if part]
    return ids or None


def parse_domain_paths(raw: Any) -> list[Path] | None:
    """Pack folders given as a list, or as one os.pathsep-separated text; each must be a
    folder (None or nothing given is None)."""
    if raw is None:
        return None
    items = list(raw) if isinstance(raw, list | tuple) else str(raw).split(os.pathsep)
    paths = [Path(str(item)).expanduser() for item in items if str(item).strip()]
    for path in paths:
        if not path.is_dir():
            raise ConfigError(f"domain path {path} is not a folder")
    return paths or None


def parse_workers(raw: Any) -> int | None:
    """`--workers`: None when not given, N >= 1, or 0 (one per CPU) for `0` / `auto`."""
    if raw is None or isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    value = str(raw).strip().lower()
    if value == "auto":
        return 0
    if not value.isdigit():
        raise ConfigError(f"--workers takes a number of processes or auto, not '{raw}'")
    return int(value)


def parse_provider_limits(raw: Any) -> dict[str, int]:
    """`openai=40,anthropic=20` (or the same as a dict) as {"openai": 40, "anthropic": 20}."""
    if isinstance(raw, dict):
        raw = ",".join(f"{k}={v}" for k, v in raw.items())
    limits: dict[str, int] = {}
    for part in str(raw or "").replace(" ", "").split(","):
        if not part:
            continue
        provider, sep, value = part.partition("=")
        if not sep or not provider or not value.isdigit() or int(value) < 1:
            raise ConfigError(
                f"--provider-limit takes provider=N pairs such as openai=40,anthropic=20, "
                f"not '{part}'"
            )
        limits[provider.lower()] = int(value)
    return limits


class RunConfig(BaseModel):
    """Everything a run is. Its fields are `tau-harness run`'s options in their Python
    spelling (`--retrieval-config-kwargs` is `retrieval_kwargs`, `--enforce-communication-protocol`
    `enforce_protocol`, `--provider-limit` `provider_limits`); the defaults are the command's.
    Immutable: `config.replace(field=value)` is a checked copy."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    # --- what is run --------------------------------------------------------------------------
    domain: str
    #: Domain pack folders to look in (`--domain-path`; a list, or one os.pathsep-separated
    #: text), ahead of $TAU_DOMAIN_PATH's; installed packs need none (docs/own-domain.md).
    domain_paths: list[Path] | None = None
    #: The benchmark data folder (None: $TAU2_DATA_DIR, else the bundled demo data's domains).
    data_dir: Path | None = None
    #: A named task set of the domain's data (`--task-set-name`; None: the domain's own tasks).
    task_set_name: str | None = None
    task_split: str | None = "base"
    #: Task ids (a list, or one space- or comma-separated text); None: the whole split.
    task_ids: list[str] | None = None
    num_tasks: int | None = Field(None, ge=1)
    num_trials: int = Field(1, ge=1)
    seed: int = DEFAULT_SEED
    #: A domain with retrieval configs (banking_knowledge): the config and its kwargs (None:
    #: the reference's default, alltools).
    retrieval_config: str | None = None
    retrieval_kwargs: dict[str, Any] | None = None

    # --- who plays ------------------------------------------------------------------------------
    agent: str = "llm"
    #: With agent "cmd": the program run per simulation against its MCP endpoint (docs/serve.md).
    agent_cmd: str | None = None
    agent_llm: str | None = None
    #: None: the prompt set's defaults; a dict replaces them (see harness.prompt_sets).
    agent_llm_args: dict[str, Any] | None = None
    user: str = "llm"
    user_llm: str | None = None
    user_llm_args: dict[str, Any] | None = None

    # --- the conversation -----------------------------------------------------------------------
    max_steps: int = Field(DEFAULT_MAX_STEPS, ge=1)
    max_errors: int = Field(DEFAULT_MAX_ERRORS, ge=1)
    #: Seconds of wall-clock time a simulation may take (None: no limit); past it the
    #: conversation ends with the termination 'timeout', as in the reference. With agent
    #: "cmd", how long the program may run.
    timeout: float | None = Field(None, ge=0)
    enforce_protocol: bool = False

    # --- grading --------------------------------------------------------------------------------
    #: The NL-assertion judge's model: None is the default judge (the reference texts', else
    #: ours); "none" leaves NL assertions out of the reward.
    judge_llm: str | None = None
    judge_llm_args: dict[str, Any] | None = None
    #: `--auto-review`: the reference's LLM review of each simulation as it finishes.
    review: ReviewSettings | None = None

    # --- where and how --------------------------------------------------------------------------
    #: URL of a running tau-server (None: the server app in this process) and its bearer token.
    server: str | None = None
    server_token: str | None = Field(None, repr=False)
    #: Worker processes (None or 1: this process; 0: one per CPU); with `ray`, Ray actors.
    workers: int | None = Field(None, ge=0)
    #: Run on Ray: an address as Ray takes it (auto, ray://host:port) or "local" (start one).
    ray: str | None = None
    #: Requests in flight per litellm provider, over all workers: {"openai": 40}.
    provider_limits: dict[str, int] | None = None
    max_concurrency: int = Field(3, ge=1)
    max_retries: int = Field(3, ge=0)
    retry_delay: float = Field(1.0, ge=0)

    # --- the results file -----------------------------------------------------------------------
    #: Results file; an existing one is resumed (None: nothing is written).
    save_to: Path | None = None
    #: The run preset that filled options (tau_mcp.harness.presets.record), kept in the header.
    preset: dict[str, Any] | None = None

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as exc:
            raise ConfigError(_one_sentence(exc)) from None

    # --- checks ---------------------------------------------------------------------------------
    @field_validator("task_ids", mode="before")
    @classmethod
    def _ids(cls, value: Any) -> list[str] | None:
        return split_ids(value)

    @field_validator("domain", mode="before")
    @classmethod
    def _domain(cls, value: Any) -> Any:
        if value is None or isinstance(value, str) and not value.strip():
            raise ValueError("the run needs a domain's name (`tau-harness domains` lists them)")
        return value

    @field_validator("domain_paths", mode="before")
    @classmethod
    def _domain_paths(cls, value: Any) -> list[Path] | None:
        return parse_domain_paths(value)

    @field_validator("workers", mode="before")
    @classmethod
    def _workers(cls, value: Any) -> int | None:
        return parse_workers(value)

    @field_validator("provider_limits", mode="before")
    @classmethod
    def _limits(cls, value: Any) -> dict[str, int] | None:
        return parse_provider_limits(value) or None if value is not None else None

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        if self.agent == "cmd":
            if not self.agent_cmd or not self.agent_cmd.strip():
                raise ValueError('agent "cmd" needs the program to run: --agent-cmd "COMMAND"')
            if self.ray is not None:
                raise ValueError("--agent cmd runs its programs on this machine; drop --ray")
            if self.workers not in (None, 1):
                raise ValueError(
                    "--workers cannot run --agent cmd (it hosts an MCP server of its own for "
                    "each simulation); leave --workers out"
                )
        elif self.agent_cmd:
            raise ValueError("--agent-cmd goes with --agent cmd")
        return self

    # --- derived --------------------------------------------------------------------------------
    @property
    def judge(self) -> Judge | None:
        """The NL-assertion judge this run grades with (None: NL assertions are left out)."""
        return build_judge(self.judge_llm, self.judge_llm_args)

    def replace(self, **changes: Any) -> RunConfig:
        """A copy with `changes`, checked as a new config is."""
        return type(self)(**{**dict(self), **changes})


def _one_sentence(exc: ValidationError) -> str:
    """pydantic's first complaint as one sentence naming the option."""
    error = exc.errors(include_url=False)[0]
    name = ".".join(str(part) for part in error["loc"]) or "the run configuration"
    if error["type"] == "extra_forbidden":
        known = list(RunConfig.model_fields)
        close = [f for f in known if f.startswith(name)] or difflib.get_close_matches(
            name, known, n=1
        )
        hint = f" (did you mean {close[0]}?)" if close else ""
        return f"unknown run option '{name}'{hint}"
    if error["type"] == "missing":
        return f"the run option {name} is required"
    message = str(error["msg"]).removeprefix("Value error, ")
    if error["type"] == "value_error":
        return message
    given = error.get("input")
    shown = f", not {given!r}" if not isinstance(given, dict) or len(repr(given)) < 80 else ""
    return f"{name}: {message[:1].lower()}{message[1:]}{shown}"


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
