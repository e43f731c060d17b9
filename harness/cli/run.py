"""`tau-harness run`: run simulations, grade them and save the results.

The batch (`tau_mcp.harness.runner.Runner`) runs on one executor: this process (the default), local
worker processes (`--workers`), Ray actors (`--ray`), or an agent program per simulation
(`--agent cmd`, `tau_mcp.harness.serve.command`).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tau_mcp.conversation.llm import set_request_gate
from tau_mcp.harness.backends import EpisodeBackend, InfrastructureError
from tau_mcp.harness.cli.common import (
    DOMAIN_HELP,
    JUDGE_HELP,
    RETRIEVAL_HELP,
    RETRIEVAL_KWARGS_HELP,
    REVIEW_LLM_HELP,
    TASK_SET_HELP,
    console,
    fail,
    judge_option,
    llm_args_option,
    load_domain,
    open_backend,
    retrieval_kwargs_option,
    split_ids,
)
from tau_mcp.harness.cli.tau2_options import (
    Tau2OptionError,
    agent_name,
    apply_log_level,
    check_persona,
    read_extra_args,
    user_name,
)
from tau_mcp.harness.config import DEFAULT_SEED, RunConfig
from tau_mcp.harness.distributed.limits import parse_provider_limits
from tau_mcp.harness.errors import ConfigError, ServerGone
from tau_mcp.harness.metrics import is_success
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.preflight import check_models, first_request_check, models_called
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
from tau_mcp.harness.runner import Runner, SimulationExecutor
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError

#: Extra arguments are `--task-ids a b c` as the reference's CLI takes them, and the reference's
#: voice and log options (tau_mcp.harness.cli.tau2_options sorts them out).
CONTEXT_SETTINGS = {"allow_extra_args": True, "ignore_unknown_options": True}
PRESET_KEY = "tau_preset"  # where the preset's record waits for the RunConfig (ctx.meta)
TURN_ROLES = {"agent", "user"}  # models called in every turn (the judge only at grading)
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
    retrieval_config_kwargs: str = typer.Option(
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
    config = RunConfig(
        domain=domain,
        agent=agent,
        agent_llm=agent_llm,
        agent_llm_args=llm_args_option("--agent-llm-args", agent_llm_args),
        user=user,
        user_llm=user_llm,
        user_llm_args=llm_args_option("--user-llm-args", user_llm_args),
        task_split=task_split,
        task_ids=split_ids(task_ids),
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
        judge=judge_option(judge_llm, judge_llm_args),
        save_to=save_to,
        preset=ctx.meta.get(PRESET_KEY),
        review=_review_settings(auto_review, review_mode, review_llm),
        retrieval_config=retrieval_config,
        retrieval_kwargs=retrieval_kwargs_option(retrieval_config_kwargs),
    )
    try:
        limits = parse_provider_limits(provider_limit)
        count = _worker_count(workers)
        loaded = load_domain(domain, data_dir, task_set=task_set_name)
        if ray is None and count is not None and count != 1:
            simulations = _run_with_workers(
                config, loaded, count, server, server_token, limits, agent_cmd, timeout
            )
        else:
            ray_workers = count or None  # Ray's default (0, auto): one per CPU of the cluster
            simulations = asyncio.run(
                _run(
                    config,
                    loaded,
                    server,
                    server_token,
                    ray,
                    limits,
                    agent_cmd,
                    timeout,
                    ray_workers,
                )
            )
    except ServerGone as exc:
        fail(stopped_message(str(exc), config.save_to))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(interrupted_message(config.save_to), err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    failure = infra_failure_message(simulations, config.save_to)
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
        print_preset(chosen, ctx.meta[PRESET_KEY]["overridden"])
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


def simulations_for(
    backend: EpisodeBackend,
    domain: Domain,
    config: RunConfig,
    agent_cmd: str | None = None,
    timeout: float | None = None,
) -> SimulationRunner:
    """The run's one-simulation piece; with `--agent cmd` the agent's seat is the hosted MCP
    endpoint a program plays (`tau_mcp.harness.serve`, loaded only then)."""
    if config.agent == "cmd":
        if not agent_cmd or not agent_cmd.strip():
            raise ConfigError('--agent cmd needs the program to run: --agent-cmd "COMMAND"')
        from tau_mcp.harness.serve.channel import OutsideAgent

        # --timeout bounds the program (tau_mcp.harness.serve.command), which then ends the
        # conversation from the agent's side and has it graded (docs/serve.md)
        config = replace(config, timeout=None)
        return SimulationRunner(backend, domain, config, agent_factory=OutsideAgent)
    if agent_cmd:
        raise ConfigError("--agent-cmd goes with --agent cmd")
    return SimulationRunner(backend, domain, config)


async def _run(
    config: RunConfig,
    domain: Domain,
    server: str | None,
    token: str | None,
    ray_address: str | None = None,
    provider_limits: dict[str, int] | None = None,
    agent_cmd: str | None = None,
    timeout: float | None = None,
    ray_workers: int | None = None,
) -> list[dict[str, Any]]:
    backend = await open_backend(domain, server, token)
    pool = None
    try:
        simulations = simulations_for(backend, domain, config, agent_cmd, timeout)
        # bad task ids (or none the agent can run) fail here, before any output
        tasks = simulations.select().tasks
        # so does a missing API key (for the models as resolved: defaults filled in). When the
        # agent or user calls a model, every simulation starts with a model request: the check
        # waits for the first one, so start-up does not import litellm. Otherwise (only the
        # judge, late in a simulation; or Ray workers calling the models) it runs now.
        uses = models_called(
            simulations.config, tasks, simulations.grader.judge, simulations.reviewer
        )
        check_now = ray_address is not None or not any(u.role in TURN_ROLES for u in uses)
        if check_now:
            check_models(uses)
        executor: SimulationExecutor | None = None
        if config.agent == "cmd":
            if ray_address is not None:
                raise ConfigError("--agent cmd runs its programs on this machine; drop --ray")
            from tau_mcp.harness.serve.command import CommandExecutor

            executor = CommandExecutor(simulations, agent_cmd or "", timeout)
        if ray_address is not None:
            from tau_mcp.harness.distributed.ray_pool import RayPool

            executor = pool = RayPool(
                simulations,
                address=ray_address,
                server=server,
                token=token,
                provider_limits=provider_limits,
                workers=ray_workers,
            )
        else:
            limits = None
            if provider_limits:
                from tau_mcp.harness.distributed.limits import LocalProviderLimits

                limits = LocalProviderLimits(provider_limits).gate
            set_request_gate(first_request_check([] if check_now else uses, limits))
        return await _drive(Runner(simulations, executor), domain, config)
    finally:
        if pool is not None:
            pool.close()
        set_request_gate(None)
        await backend.close()


def _worker_count(raw: str | None) -> int | None:
    if raw is None:
        return None
    from tau_mcp.harness.distributed.process_pool import parse_workers

    return parse_workers(raw)


def _run_with_workers(
    config: RunConfig,
    domain: Domain,
    count: int,
    server: str | None,
    token: str | None,
    provider_limits: dict[str, int],
    agent_cmd: str | None,
    timeout: float | None,
) -> list[dict[str, Any]]:
    """`--workers N`: everything is checked here, the workers are forked before the event loop
    starts (they inherit the loaded domain and imported modules), then the loop drives the run."""
    from tau_mcp.harness.distributed.process_pool import NoBackend, ProcessPool, cpu_count, preload

    if config.agent == "cmd":
        raise ConfigError(
            "--workers cannot run --agent cmd (it hosts an MCP server of its own for each "
            "simulation); leave --workers out"
        )
    simulations = simulations_for(NoBackend(), domain, config, agent_cmd, timeout)  # type: ignore[arg-type]
    tasks = simulations.select().tasks
    count = min(count or cpu_count(), config.max_concurrency, len(tasks) * config.num_trials)
    if count <= 1:  # nothing to share out: the usual single-process run
        return asyncio.run(
            _run(config, domain, server, token, None, provider_limits, agent_cmd, timeout)
        )
    # The key check runs once, here: it imports litellm (seconds of CPU) before the fork, so
    # no worker imports it again, and a missing key is one sentence with no results file.
    check_models(
        models_called(simulations.config, tasks, simulations.grader.judge, simulations.reviewer)
    )
    preload(domain)
    pool = ProcessPool(
        simulations, count, server=server, token=token, provider_limits=provider_limits
    )
    try:
        return asyncio.run(_drive(Runner(simulations, pool), domain, config))
    finally:
        pool.close()


def start_notes(runner: Runner, config: RunConfig, todo: int) -> list[str]:
    """What a run says before its first simulation: the tasks its agent cannot run (left out,
    as the reference leaves them out), and what a resumed run kept."""
    notes = []
    note = runner.selection.note(config.agent) if runner.selection else None
    if note:
        notes.append(f"{note}; the results header lists them (filtered_tasks)")
    if runner.kept:
        notes.append(
            f"resuming {config.save_to}: kept {runner.kept} finished simulation"
            f"{'' if runner.kept == 1 else 's'}, {todo} to run"
        )
    return notes


async def _drive(runner: Runner, domain: Domain, config: RunConfig) -> list[dict[str, Any]]:
    """Run every simulation with the progress bar, then print the summary."""
    passed = finished = infra = 0
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("pass {task.fields[rate]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    ) as progress:
        # hidden until the run starts, so a refusal (lock, resume) prints no empty bar
        bar = progress.add_task(f"{domain.name}", total=None, rate="-", visible=False)

        def on_done(record: SimulationRecord) -> None:
            nonlocal passed, finished, infra
            if not record.infrastructure_error:
                finished += 1
                passed += is_success(record.reward)
            else:
                infra += 1
            progress.update(bar, advance=1, rate=progress_rate(passed, finished, infra))

        def on_start(todo: int) -> None:
            for line in start_notes(runner, config, todo):
                progress.console.print(line, markup=False, highlight=False)
            progress.update(bar, total=todo, visible=True)

        try:
            results = await runner.run(on_done, on_start)
        except ConfigError:
            # The run stops before it did anything (say, a missing key found as the first
            # model request went out): the error alone, no empty bar.
            progress.update(bar, visible=False)
            raise
    from tau_mcp.harness.report import print_summary  # its modules are needed once, at the end

    print_summary(
        console,
        results.simulations,
        f"{domain.name}: {config.agent} agent, {config.user} user",
        info=results.header["info"],
        label=str(config.save_to or "run"),
    )
    if config.save_to:
        console.print(f"results saved to {config.save_to}")
    return results.simulations
