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
    JUDGE_HELP,
    RETRIEVAL_HELP,
    RETRIEVAL_KWARGS_HELP,
    REVIEW_LLM_HELP,
    TASK_SET_HELP,
    console,
    fail,
    json_arg,
    llm_args_option,
    retrieval_kwargs_option,
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
from tau_mcp.harness.config import DEFAULT_SEED, RunConfig
from tau_mcp.harness.errors import ConfigError, ServerGone
from tau_mcp.harness.metrics import is_success
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.prompt_sets import help_defaults
from tau_mcp.harness.results import ResultsError, SimulationRecord
from tau_mcp.harness.review import ReviewSettings, check_mode
from tau_mcp.harness.run_outcome import (
    INTERRUPTED_EXIT,
    infra_failure_message,
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
        help="llm, solo, gt, oracle, cmd (--agent-cmd), or a plug-in class as module:Class "
        "(the reference's llm_agent, llm_agent_gt and llm_agent_solo name ours).",
    ),
    agent_cmd: str = typer.Option(
        None, "--agent-cmd", help="With --agent cmd: program run per simulation (docs/serve.md)."
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
        "base", "--task-split", "--task-split-name", help="Task split to draw tasks from."
    ),
    task_set_name: str = typer.Option(
        None,
        "--task-set-name",
        help=TASK_SET_HELP,
    ),
    task_ids: list[str] = typer.Option(
        None, "--task-ids", help="Task ids: space- or comma-separated, or repeat the option."
    ),
    num_tasks: int = typer.Option(None, "--num-tasks", min=1, help="Run only the first N tasks."),
    num_trials: int = typer.Option(1, "--num-trials", min=1),
    max_concurrency: int = typer.Option(3, "--max-concurrency", min=1),
    seed: int = typer.Option(DEFAULT_SEED, "--seed"),
    max_steps: int = typer.Option(DEFAULT_MAX_STEPS, "--max-steps", min=1),
    max_errors: int = typer.Option(DEFAULT_MAX_ERRORS, "--max-errors", min=1),
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
    server_token: str = typer.Option(
        None, "--server-token", envvar="TAU_SERVER_TOKEN", help="Bearer token."
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
    auto_resume: bool = typer.Option(
        False,
        "--auto-resume",
        help="The reference's spelling; tau-mcp always resumes an existing --save-to file "
        "without asking (and refuses one written with other settings).",
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
    if not domain:
        fail(
            "--domain is required (see `tau-server serve --help` for the domains), or a --preset that sets it"
        )
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
        save_to = _default_results_path(domain, agent, user)
    try:
        config = RunConfig(
            domain=domain,
            data_dir=data_dir,
            task_set_name=task_set_name,
            agent=agent,
            agent_cmd=agent_cmd,
            agent_llm=agent_llm,
            agent_llm_args=llm_args_option("--agent-llm-args", agent_llm_args),
            user=user,
            user_llm=user_llm,
            user_llm_args=llm_args_option("--user-llm-args", user_llm_args),
            task_split=task_split,
            task_ids=task_ids,
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
            server=server,
            server_token=server_token,
            workers=workers,
            ray=ray,
            provider_limits=provider_limit,
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
    except KeyboardInterrupt:
        typer.echo(interrupted_message(config.save_to), err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    from tau_mcp.harness.report import print_summary  # its modules are needed once, at the end

    print_summary(
        console,
        results.simulations,
        f"{config.domain}: {config.agent} agent, {config.user} user",
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


def _default_results_path(domain: str, agent: str, user: str) -> Path:
    """results/<time>_<domain>_<agent>_<user>.json, safe as a file name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}_{domain}_{agent}_{user}".replace(":", "-").replace("/", "-")
    return Path("results") / f"{name}.json"


class ProgressBar:
    """The run's progress on the terminal: a bar counting simulations and the pass rate over
    graded ones (infrastructure errors beside it), shown once the run has really started."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.passed = self.graded = self.infra = 0
        self.progress: Progress | None = None
        self.bar: Any = None

    @contextmanager
    def watching(self) -> Iterator[None]:
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("pass {task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            self.progress = progress
            # hidden until the run starts, so a refusal (lock, resume) prints no empty bar
            self.bar = progress.add_task(self.config.domain, total=None, rate="-", visible=False)
            try:
                yield
            except ConfigError:
                # The run stops before it did anything (say, a missing key found as the first
                # model request went out): the error alone, no empty bar.
                progress.update(self.bar, visible=False)
                raise

    def started(self, notes: list[str], todo: int) -> None:
        assert self.progress is not None
        for line in notes:
            self.progress.console.print(line, markup=False, highlight=False)
        self.progress.update(self.bar, total=todo, visible=True)

    def finished(self, record: SimulationRecord) -> None:
        assert self.progress is not None
        if not record.infrastructure_error:
            self.graded += 1
            self.passed += is_success(record.reward)
        else:
            self.infra += 1
        rate = progress_rate(self.passed, self.graded, self.infra)
        self.progress.update(self.bar, advance=1, rate=rate)
