"""`tau-harness run`: run simulations, grade them and save the results.

A thin skin on the run API (`tau_mcp.harness.api.run`): the options are read into a `RunConfig`,
the API runs it (executor, key checks, provider limits, workers, resume, the results file), and
this command shows a progress bar and prints the summary.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

from tau_mcp.harness.api import run as run_config
from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.cli.common import (
    DOMAIN_HELP,
    FAULTS_HELP,
    FAULTS_PROFILE_HELP,
    JUDGE_HELP,
    RECORD_HELP,
    REPLAY_HELP,
    REPLAY_MISS_HELP,
    RETRIEVAL_HELP,
    RETRIEVAL_KWARGS_HELP,
    REVIEW_LLM_HELP,
    SERVER_TOKEN_FILE_HELP,
    SERVER_TOKEN_HELP,
    TASK_SET_HELP,
    console,
    fail,
    json_arg,
    llm_args_option,
    retrieval_kwargs_option,
    server_token_option,
)
from tau_mcp.harness.cli.progress import Progress
from tau_mcp.harness.cli.tau2_options import (
    Tau2OptionError,
    agent_name,
    apply_log_level,
    check_persona,
    read_extra_args,
    user_name,
)
from tau_mcp.harness.config import DEFAULT_SEED, RunConfig, original_env_domain
from tau_mcp.harness.errors import ConfigError, ServerGone
from tau_mcp.harness.metrics import is_success
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.prompt_sets import help_defaults
from tau_mcp.harness.results import ResultsError, SimulationRecord
from tau_mcp.harness.review import ReviewSettings, check_mode
from tau_mcp.harness.run_outcome import (
    infra_failure_message,
    interrupted_exit,
    interrupted_message,
    progress_rate,
    stopped_message,
)
from tau_mcp.servers.engine.errors import EngineError

#: Extra arguments are `--task-ids a b c` as the reference's CLI takes them, and the reference's
#: voice and log options (tau_mcp.harness.cli.tau2_options sorts them out).
CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}
PRESET_KEY = "tau_preset"  # where the preset's record waits for the RunConfig (ctx.meta)
_DEFAULTS = help_defaults()
_FROM = (
    "from the data folder's reference texts"
    if _DEFAULTS.source != "tau-mcp"
    else "tau-mcp's own; reference texts in the data folder set the reference's"
)


def run(
    ctx: typer.Context,
    domain: str = typer.Option(None, "--domain", "-d", help=DOMAIN_HELP),
    preset: str = typer.Option(
        None,
        "--preset",
        help="Fill the options from a named run shape (`tau-harness presets` lists them); "
        "options given here win.",
    ),
    show_preset: bool = typer.Option(
        False, "--show", help="With --preset: print what the preset sets, and do not run."
    ),
    agent: str = typer.Option(
        "llm",
        help="llm, solo, gt, oracle, oracle-retry (the oracle retrying retryable injected "
        "faults), cmd (--agent-cmd), or a plug-in class as module:Class (the reference's "
        "llm_agent, llm_agent_gt and llm_agent_solo name ours).",
    ),
    agent_cmd: str = typer.Option(
        None, "--agent-cmd", help="With --agent cmd: program run per simulation (docs/serve.md)."
    ),
    outside_agent_name: str = typer.Option(
        None,
        "--agent-name",
        help="With --agent cmd: a label for the program's agent (e.g. the model it runs), "
        "recorded and shown in place of a model (none of ours is called).",
    ),
    timeout: float = typer.Option(
        None,
        "--timeout",
        min=0,
        help="Seconds of wall-clock time per simulation; past it the conversation ends "
        "(ending 'timeout', reward 0), as in the reference. With --agent cmd, also how long "
        "the program may run.",
    ),
    agent_llm: str = typer.Option(
        None,
        "--agent-llm",
        help=f"litellm model name for the agent (default: {_DEFAULTS.agent_llm}, {_FROM}).",
    ),
    agent_llm_args: str = typer.Option(
        None,
        "--agent-llm-args",
        help="JSON object; replaces (does not merge into) the default "
        f"{json.dumps(_DEFAULTS.agent_llm_args)}, {_FROM}.",
    ),
    user: str = typer.Option(
        "llm",
        help="llm, scripted or dummy (solo runs); the reference's user_simulator and dummy_user "
        "name ours.",
    ),
    user_llm: str = typer.Option(
        None,
        "--user-llm",
        help=f"litellm model for the user simulator (default: {_DEFAULTS.user_llm}, {_FROM}).",
    ),
    user_llm_args: str = typer.Option(
        None,
        "--user-llm-args",
        help="JSON object; replaces (does not merge into) the default "
        f"{json.dumps(_DEFAULTS.user_llm_args)}, {_FROM}.",
    ),
    task_split: str = typer.Option(
        "base",
        "--task-split",
        "--task-split-name",
        help="Task split to draw tasks from (base: the domain's default split, test on the "
        "τ-bench domains).",
    ),
    task_set_name: str = typer.Option(
        None,
        "--task-set-name",
        help=TASK_SET_HELP,
    ),
    task_ids: list[str] = typer.Option(
        None,
        "--task-ids",
        help="Task ids: space- or comma-separated, or repeat the option; a number is the task "
        "at that position of the split (τ-bench: --task-split test --task-ids 2 is test_2).",
    ),
    start_index: int = typer.Option(
        0, "--start-index", min=0, help="Run the split's tasks from this position (τ-bench's)."
    ),
    end_index: int = typer.Option(
        -1, "--end-index", help="... up to this position, not included (-1: to the end)."
    ),
    num_tasks: int = typer.Option(None, "--num-tasks", min=1, help="Run only the first N tasks."),
    num_trials: int = typer.Option(1, "--num-trials", min=1),
    max_concurrency: int = typer.Option(3, "--max-concurrency", min=1),
    seed: int = typer.Option(
        None, "--seed", help=f"The run's seed (default {DEFAULT_SEED}; τ-bench domains: 10)."
    ),
    shuffle: int = typer.Option(
        0, "--shuffle", help="1: each trial runs its tasks in an order shuffled with the seed."
    ),
    max_steps: int = typer.Option(DEFAULT_MAX_STEPS, "--max-steps", min=1),
    max_errors: int = typer.Option(
        None,
        "--max-errors",
        min=1,
        help=f"Failed tool calls that end a conversation (default {DEFAULT_MAX_ERRORS}; "
        "τ-bench domains: no limit).",
    ),
    max_retries: int = typer.Option(
        3, "--max-retries", min=0, help="Retries of infrastructure failures."
    ),
    retry_delay: float = typer.Option(
        1.0, "--retry-delay", min=0, help="Seconds to wait before retrying a failed simulation."
    ),
    judge_llm: str = typer.Option(None, "--judge-llm", help=JUDGE_HELP),
    judge_llm_args: str = typer.Option(
        None, "--judge-llm-args", help="JSON arguments laid over the judge's default ones."
    ),
    enforce_protocol: bool = typer.Option(
        False,
        "--enforce-communication-protocol",
        help="End with agent_error/user_error when a message mixes text and tool calls.",
    ),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(None, "--server-token", help=SERVER_TOKEN_HELP),
    server_token_file: Path = typer.Option(
        None, "--server-token-file", help=SERVER_TOKEN_FILE_HELP
    ),
    save_to: Path = typer.Option(
        None,
        "--save-to",
        help="Results file; rerunning with it resumes (default: a new file under ./results/).",
    ),
    ray: str = typer.Option(
        None,
        "--ray",
        help="Run the simulations on Ray: ADDRESS as Ray takes it (auto, ray://host:port); "
        "--ray alone starts a local instance. Needs the ray extra.",
    ),
    workers: str = typer.Option(
        None,
        "--workers",
        metavar="N",
        help="Worker processes running the simulations; 0 or auto: one per CPU (default 1: all "
        "in this process, which stays the only writer of the results file; --max-concurrency "
        "is the total over workers). With --ray: the number of Ray actors (default one per CPU "
        "of the cluster).",
    ),
    provider_limit: str = typer.Option(
        None,
        "--provider-limit",
        help="Requests in flight per litellm provider, over all workers: openai=40,anthropic=20.",
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    record: Path = typer.Option(None, "--record", metavar="DIR", help=RECORD_HELP),
    replay: Path = typer.Option(None, "--replay", metavar="DIR", help=REPLAY_HELP),
    replay_miss: str = typer.Option("fail", "--replay-miss", help=REPLAY_MISS_HELP),
    auto_review: bool = typer.Option(
        False, "--auto-review", help="Review each simulation with an LLM as it finishes."
    ),
    review_mode: str = typer.Option(
        "full", "--review-mode", help="With --auto-review: full or user."
    ),
    review_llm: str = typer.Option(None, "--review-llm", "--review-model", help=REVIEW_LLM_HELP),
    retrieval_config: str = typer.Option(None, "--retrieval-config", help=RETRIEVAL_HELP),
    retrieval_kwargs: str = typer.Option(
        None, "--retrieval-config-kwargs", help=RETRIEVAL_KWARGS_HELP
    ),
    faults: str = typer.Option(None, "--faults", help=FAULTS_HELP),
    faults_profile: str = typer.Option(None, "--faults-profile", help=FAULTS_PROFILE_HELP),
    auto_resume: bool = typer.Option(
        False,
        "--auto-resume",
        help="The reference's spelling; tau-mcp always resumes an existing --save-to file "
        "without asking (and refuses one written with other settings).",
    ),
    env: str = typer.Option(
        None, "--env", help="τ-bench's spelling of --domain: NAME is the domain tau-bench-NAME."
    ),
    agent_strategy: str = typer.Option(
        None,
        "--agent-strategy",
        help="τ-bench's spelling of --agent: tool-calling, act, react or few-shot.",
    ),
    user_strategy: str = typer.Option(
        None,
        "--user-strategy",
        help="τ-bench's spelling of --user: llm, react, verify or reflection.",
    ),
    model: str = typer.Option(None, "--model", help="τ-bench's spelling of --agent-llm."),
    model_provider: str = typer.Option(
        None, "--model-provider", help="With --model: its litellm provider (openai, ...)."
    ),
    user_model: str = typer.Option(None, "--user-model", help="τ-bench's --user-llm."),
    user_model_provider: str = typer.Option(
        None, "--user-model-provider", help="With --user-model: its litellm provider."
    ),
    temperature: float = typer.Option(
        None, "--temperature", help="The agent model's temperature (into --agent-llm-args)."
    ),
    few_shot_displays_path: Path = typer.Option(
        None,
        "--few-shot-displays-path",
        help="The few-shot agent's examples, a JSON-lines file (default: the τ-bench "
        "domain's own).",
    ),
    user_init_calls: bool = typer.Option(
        False,
        "--user-init-calls",
        help="Also send the model calls the original τ-bench's user simulator makes while it "
        "is built (no instruction; one per task and one per run). They change nothing.",
    ),
    log_dir: Path = typer.Option(
        None,
        "--log-dir",
        help="τ-bench's spelling: the folder the results file goes in (with no --save-to).",
    ),
    taubench_data_dir: Path = typer.Option(
        None,
        "--taubench-data-dir",
        help="The original τ-bench's data folder (default $TAUBENCH_DATA_DIR).",
    ),
    user_persona: str = typer.Option(
        None,
        "--user-persona",
        help="The reference's JSON persona option: read and, as in the reference (1.0.1), "
        "not used.",
    ),
    log_level: str = typer.Option(
        None,
        "--log-level",
        help="DEBUG, INFO, WARNING, ERROR or CRITICAL: tau-mcp's and litellm's logs.",
    ),
) -> None:
    """Run simulations, grade them and save the results."""
    if preset is not None:
        return _with_preset(ctx, preset, show_preset)
    if show_preset:
        fail("--show goes with --preset NAME")
    if env is not None:
        try:
            named = original_env_domain(env)
        except ValueError as exc:
            fail(f"--{exc}")
        if domain and domain != named:
            fail(f"--env {env} and --domain {domain} disagree")
        domain = named
    if not domain:
        from tau_mcp.servers.domains.registry import domain_names  # reads no domain

        fail(
            f"--domain is required (one of {', '.join(domain_names())}; `tau-harness domains` "
            "says where each comes from, `tau-harness domain NAME` describes one), or a "
            "--preset that sets it"
        )
    agent = _strategy("agent", agent, agent_strategy)
    user = _strategy("user", user, user_strategy)
    try:
        # `--task-ids a b c` as the reference's CLI takes it: the values after the first land
        # in ctx.args, with the reference's voice and log options (noted, not used).
        extra = read_extra_args(ctx.args, [o for p in ctx.command.params for o in p.opts])
        agent, user = agent_name(agent), user_name(user)
        check_persona(user_persona)
        apply_log_level(log_level)
    except Tau2OptionError as exc:
        fail(str(exc))
        return
    if extra.task_ids:
        if not task_ids:
            fail(f"unexpected arguments: {' '.join(extra.task_ids)}")
            return
        task_ids = [*task_ids, *extra.task_ids]
    for note in extra.notes:
        typer.echo(note, err=True)
    if save_to is None:
        save_to = _default_results_path(domain, agent, user, log_dir)
    try:
        config = RunConfig(
            domain=domain,
            data_dir=data_dir,
            task_set_name=task_set_name,
            agent=agent,
            agent_cmd=agent_cmd,
            agent_name=outside_agent_name,
            agent_llm=agent_llm,
            agent_llm_args=llm_args_option("--agent-llm-args", agent_llm_args),
            user=user,
            user_llm=user_llm,
            user_llm_args=llm_args_option("--user-llm-args", user_llm_args),
            task_split=task_split,
            task_ids=task_ids,
            start_index=start_index,
            end_index=end_index,
            shuffle=bool(shuffle),
            model=model,
            model_provider=model_provider,
            user_model=user_model,
            user_model_provider=user_model_provider,
            temperature=temperature,
            few_shot_displays_path=few_shot_displays_path,
            user_init_calls=user_init_calls,
            taubench_data_dir=taubench_data_dir,
            num_tasks=num_tasks,
            num_trials=num_trials,
            max_concurrency=max_concurrency,
            seed=seed,
            max_steps=max_steps,
            max_errors=max_errors,
            max_retries=max_retries,
            retry_delay=retry_delay,
            timeout=timeout,
            enforce_protocol=enforce_protocol,
            judge_llm=judge_llm,
            judge_llm_args=json_arg("--judge-llm-args", judge_llm_args) or None,
            save_to=save_to,
            preset=ctx.meta.get(PRESET_KEY),
            review=_review_settings(auto_review, review_mode, review_llm),
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval_kwargs_option(retrieval_kwargs),
            faults=faults,
            faults_profile=faults_profile,
            server=server,
            server_token=server_token_option(server_token, server_token_file),
            workers=workers,
            ray=ray,
            provider_limits=provider_limit,
            record=record,
            replay=replay,
            replay_miss=replay_miss,
        )
    except ConfigError as exc:
        fail(str(exc))
    watcher = ProgressBar(config)
    try:
        results = run_config(config, watcher)
    except ServerGone as exc:
        fail(stopped_message(str(exc), config.save_to))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt as stopped:  # Ctrl-C, or SIGTERM (RunStopped)
        typer.echo(interrupted_message(config.save_to), err=True)
        raise typer.Exit(interrupted_exit(stopped)) from None
    from tau_mcp.harness.report import print_summary  # its modules are needed once, at the end

    print_summary(
        console,
        results.simulations,
        f"{config.domain}: {config.agent} agent{f' ({config.agent_name})' if config.agent_name else ''}, "
        f"{config.user} user",
        info=results.header["info"],
        label=str(config.save_to or "run"),
    )
    if config.save_to:
        console.print(f"results saved to {config.save_to}")
    failure = infra_failure_message(results.simulations, config.save_to)
    if failure:
        fail(failure)


def _with_preset(ctx: typer.Context, name: str, show: bool) -> None:
    """Run again with the preset's values where no option was given (or only show them)."""
    from tau_mcp.harness import presets
    from tau_mcp.harness.cli.presets import print_preset

    try:
        chosen = presets.load(name)
        values, ctx.meta[PRESET_KEY] = presets.apply(ctx, chosen)
    except presets.PresetError as exc:
        fail(str(exc))
        return
    if show:
        flags = presets.run_flags(ctx.command.params)
        print_preset(chosen, ctx.meta[PRESET_KEY]["overridden"], flags)
        return
    run(**{**values, "ctx": ctx, "preset": None})


def _review_settings(auto: bool, mode: str, model: str | None) -> ReviewSettings | None:
    if not auto:
        if model is not None or mode != "full":
            fail("--review-mode and --review-llm go with --auto-review")
        return None
    try:
        return ReviewSettings(check_mode(mode), model)
    except ConfigError as exc:
        fail(str(exc))


def _default_results_path(domain: str, agent: str, user: str, folder: Path | None) -> Path:
    """results/<time>_<domain>_<agent>_<user>.json, safe as a file name (in `folder` if
    given)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}_{domain}_{agent}_{user}".replace(":", "-").replace("/", "-")
    return (folder or Path("results")) / f"{name}.json"


def _strategy(side: str, name: str, strategy: str | None) -> str:
    """`--agent`/`--user`, or τ-bench's `--agent-strategy`/`--user-strategy` for it."""
    if strategy is None:
        return name
    if name not in ("llm", strategy):
        fail(f"--{side} {name} and --{side}-strategy {strategy} disagree")
    return strategy


class ProgressBar:
    """The run's progress: on a terminal, a line as soon as the run has started (before the
    data is read), then a bar counting simulations, those running and the pass rate over graded ones
    (infrastructure errors beside it), shown once the simulations start. A console that is
    not a terminal (a log) shows no bar until the end, so it gets a line when the
    simulations start and then one at most every LOG_EVERY seconds as they finish."""

    LOG_EVERY = 10.0

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.passed = self.graded = self.infra = self.running = self.done = 0
        self.todo = 0
        self.progress: Progress | None = None
        self.bar: Any = None
        self.began_at = self.logged_at = 0.0

    def loading(self) -> None:
        if not console.is_terminal:
            return  # a log: its lines start when the simulations do, errors stay one line
        agent = self.config.agent_name or self.config.agent
        console.print(
            f"starting a run on {self.config.domain} ({agent} agent, {self.config.user} user): "
            "loading the data",
            markup=False,
            highlight=False,
        )

    @contextmanager
    def watching(self) -> Iterator[None]:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[running]} running"),
            TextColumn("pass {task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            self.progress = progress
            # hidden until the run starts, so a refusal (lock, resume) prints no empty bar
            self.bar = progress.add_task(
                self.config.domain, total=None, rate="-", running=0, visible=False
            )
            try:
                yield
            except ConfigError:
                # The run stops before it did anything (say, a missing key found as the first
                # model request went out): the error alone, no empty bar.
                progress.update(self.bar, visible=False)
                raise

    @property
    def logging(self) -> bool:
        """Whether progress goes to a log (no terminal) as lines."""
        return self.progress is not None and not self.progress.console.is_interactive

    def started(self, notes: list[str], todo: int) -> None:
        assert self.progress is not None
        for line in notes:
            self.progress.console.print(line, markup=False, highlight=False)
        self.todo = todo
        self.began_at = self.logged_at = time.monotonic()
        if self.logging:
            self._log(f"{todo} simulation{'' if todo == 1 else 's'} to run")
        self.progress.update(self.bar, total=todo, visible=True)

    def began(self, task_id: str, trial: int) -> None:
        assert self.progress is not None
        self.running += 1
        self.progress.update(self.bar, running=self.running)

    def finished(self, record: SimulationRecord) -> None:
        assert self.progress is not None
        if not record.infrastructure_error:
            self.graded += 1
            self.passed += is_success(record.reward)
        else:
            self.infra += 1
        self.running = max(0, self.running - 1)
        self.done += 1
        rate = progress_rate(self.passed, self.graded, self.infra)
        self.progress.update(self.bar, advance=1, rate=rate, running=self.running)
        now = time.monotonic()
        if self.logging and (self.done == self.todo or now - self.logged_at >= self.LOG_EVERY):
            self.logged_at = now
            plain = progress_rate(self.passed, self.graded, 0)
            infra = f", {self.infra} infrastructure error{'s' * (self.infra != 1)}"
            self._log(
                f"{self.done}/{self.todo} done, {self.running} running, pass {plain}"
                f"{infra if self.infra else ''}, {now - self.began_at:.0f} s"
            )

    def _log(self, text: str) -> None:
        assert self.progress is not None
        self.progress.console.print(f"{self.config.domain}: {text}", markup=False, highlight=False)
