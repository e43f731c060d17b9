"""`tau-harness`: run simulations, re-grade saved ones, and look at results."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from conversation.llm import DEFAULT_LLM, set_request_gate
from harness import redaction
from harness.backends import InfrastructureError
from harness.distributed.limits import parse_provider_limits
from harness.errors import ServerGone
from harness.grading import Grader, Judge
from harness.metrics import INFRA, is_success
from harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from harness.preflight import (
    check_models,
    first_request_check,
    judge_use,
    models_called,
    needs_judge,
)
from harness.prompt_sets import help_defaults
from harness.report import (
    print_conversation,
    print_grade,
    print_summary,
    simulations_table,
    task_rates_table,
)
from harness.results import ResultsError, load_results
from harness.results_lock import results_lock
from harness.run_outcome import (
    INTERRUPTED_EXIT,
    infra_failure_message,
    interrupted_message,
    progress_rate,
    stopped_message,
)
from harness.runner import DEFAULT_SEED, ConfigError, RunConfig, make_runner, select_tasks
from servers.engine.errors import EngineError

app = typer.Typer(
    help="Run and grade tau2 simulations against tau-mcp servers.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # a crash report must not print model args (keys)
)
console = Console()

try:  # the data commands live in their own module; the harness works without them
    from harness.data_cli import data_app

    app.add_typer(data_app, name="data")
except ImportError:  # pragma: no cover - only while the module is missing
    pass

from harness.integrations.export_cli import export_app  # noqa: E402

app.add_typer(export_app, name="export")

from harness.serve.cli import serve as _serve  # noqa: E402 - outside agents (harness/serve)

app.command("serve")(_serve)

NO_JUDGE = {"none", "off", "no", ""}
TURN_ROLES = {"agent", "user"}  # models called in every turn (the judge only at grading)
_DEFAULTS = help_defaults()
_FROM = (
    "from the data folder's reference texts"
    if _DEFAULTS.source != "tau-mcp"
    else "tau-mcp's own; reference texts in the data folder set the reference's"
)
JUDGE_HELP = (
    "Model judging NL assertions; 'none' skips them (default: the reference texts' judge "
    f"model, else {DEFAULT_LLM})."
)


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"tau-harness {version('tau-mcp')}")
        except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
            typer.echo("tau-harness (tau-mcp, not installed)")
        raise typer.Exit()


@app.callback()
def _main(
    show_version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """Run and grade tau2 simulations against tau-mcp servers."""


def _fail(message: str) -> None:
    typer.echo(f"error: {redaction.redact_text(message)}", err=True)
    raise typer.Exit(1)


def _json_arg(name: str, raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        _fail(f"{name} is not valid JSON ({exc.msg} at position {exc.pos})")
    if not isinstance(value, dict):
        _fail(f"{name} must be a JSON object")
    redaction.remember_args(value)  # model arguments: their keys never reach a file or screen
    return value


def _llm_args(name: str, raw: str | None) -> dict[str, Any] | None:
    """None when not given (the defaults apply); given arguments replace the defaults."""
    return None if raw is None else _json_arg(name, raw)


def _judge(model: str | None, raw_args: str | None) -> Judge | None:
    """None when judging is switched off; model None is the default judge model."""
    if model is not None and model.strip().lower() in NO_JUDGE:
        return None
    return Judge(model, _json_arg("--judge-llm-args", raw_args))


def _load_domain(name: str, data_dir: Path | None):
    from servers.domains.registry import load_domains

    domain = load_domains([name], data_dir)[name]
    domain.load()  # canonical forms wait for the first grading: start-up reaches work sooner
    return domain


async def _backend(domain, server: str | None, token: str | None):
    from harness.backends.http import in_process_backend, remote_backend

    redaction.remember(token)

    if server:
        return await remote_backend(server, token, domain.name)
    return await in_process_backend({domain.name: domain}, token)


def _split_ids(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [part for value in values for part in value.replace(",", " ").split() if part]


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": False})
def run(
    ctx: typer.Context,
    domain: str = typer.Option(..., "--domain", help="mock, airline, retail or telecom."),
    agent: str = typer.Option(
        "llm",
        help="llm, solo, gt, oracle, cmd (--agent-cmd), or a plug-in class as module:Class.",
    ),
    agent_cmd: str = typer.Option(
        None, "--agent-cmd", help="With --agent cmd: program run per simulation (docs/serve.md)."
    ),
    timeout: float = typer.Option(
        None, "--timeout", help="With --agent cmd: seconds a program may take per simulation."
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
    user: str = typer.Option("llm", help="llm, scripted or dummy (solo runs)."),
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
    task_split: str = typer.Option("base", "--task-split", help="Task split to draw tasks from."),
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
) -> None:
    """Run simulations, grade them and save the results."""
    if ctx.args:
        # `--task-ids a b c` as the reference's CLI takes it: the values after the first land
        # here. Anything else left over is a mistake worth one clear sentence.
        if not task_ids:
            _fail(f"unexpected arguments: {' '.join(ctx.args)}")
            return
        task_ids = [*task_ids, *ctx.args]
    if save_to is None:
        save_to = _default_results_path(domain, agent, user)
    config = RunConfig(
        domain=domain,
        agent=agent,
        agent_llm=agent_llm,
        agent_llm_args=_llm_args("--agent-llm-args", agent_llm_args),
        user=user,
        user_llm=user_llm,
        user_llm_args=_llm_args("--user-llm-args", user_llm_args),
        task_split=task_split,
        task_ids=_split_ids(task_ids),
        num_tasks=num_tasks,
        num_trials=num_trials,
        max_concurrency=max_concurrency,
        seed=seed,
        max_steps=max_steps,
        max_errors=max_errors,
        max_retries=max_retries,
        enforce_protocol=enforce_protocol,
        judge=_judge(judge_llm, judge_llm_args),
        save_to=save_to,
    )
    try:
        limits = parse_provider_limits(provider_limit)
        count = _worker_count(workers)
        loaded = _load_domain(domain, data_dir)
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
        _fail(stopped_message(str(exc), config.save_to))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(interrupted_message(config.save_to), err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    failure = infra_failure_message(simulations, config.save_to)
    if failure:
        _fail(failure)


def _default_results_path(domain: str, agent: str, user: str) -> Path:
    """results/<time>_<domain>_<agent>_<user>.json, safe as a file name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}_{domain}_{agent}_{user}".replace(":", "-").replace("/", "-")
    return Path("results") / f"{name}.json"


async def _run(
    config: RunConfig,
    domain,
    server: str | None,
    token: str | None,
    ray_address: str | None = None,
    provider_limits: dict[str, int] | None = None,
    agent_cmd: str | None = None,
    timeout: float | None = None,
    ray_workers: int | None = None,
) -> list[dict[str, Any]]:
    backend = await _backend(domain, server, token)
    pool = None
    try:
        runner = make_runner(backend, domain, config, agent_cmd, timeout)
        tasks = select_tasks(domain, config)  # bad task ids fail here, before any output
        # so does a missing API key (for the models as resolved: defaults filled in). When the
        # agent or user calls a model, every simulation starts with a model request: the check
        # waits for the first one, so start-up does not import litellm. Otherwise (only the
        # judge, late in a simulation; or Ray workers calling the models) it runs now.
        uses = models_called(runner.config, tasks, runner.grader.judge)
        check_now = ray_address is not None or not any(u.role in TURN_ROLES for u in uses)
        if check_now:
            check_models(uses)
        if ray_address is not None:
            from harness.distributed.ray_pool import RayPool

            pool = RayPool(
                runner,
                address=ray_address,
                server=server,
                token=token,
                provider_limits=provider_limits,
                workers=ray_workers,
            )
            runner.executor = pool
        else:
            limits = None
            if provider_limits:
                from harness.distributed.limits import LocalProviderLimits

                limits = LocalProviderLimits(provider_limits).gate
            set_request_gate(first_request_check([] if check_now else uses, limits))
        return await _drive(runner, domain, config)
    finally:
        if pool is not None:
            pool.close()
        set_request_gate(None)
        await backend.close()


def _worker_count(raw: str | None) -> int | None:
    if raw is None:
        return None
    from harness.distributed.process_pool import parse_workers

    return parse_workers(raw)


def _run_with_workers(
    config: RunConfig,
    domain,
    count: int,
    server: str | None,
    token: str | None,
    provider_limits: dict[str, int],
    agent_cmd: str | None,
    timeout: float | None,
) -> list[dict[str, Any]]:
    """`--workers N`: everything is checked here, the workers are forked before the event loop
    starts (they inherit the loaded domain and imported modules), then the loop drives the run."""
    from harness.distributed.process_pool import NoBackend, ProcessPool, cpu_count, preload

    if config.agent == "cmd":
        raise ConfigError(
            "--workers cannot run --agent cmd (it hosts an MCP server of its own for each "
            "simulation); leave --workers out"
        )
    runner = make_runner(NoBackend(), domain, config, agent_cmd, timeout)  # type: ignore[arg-type]
    tasks = select_tasks(domain, config)
    count = min(count or cpu_count(), config.max_concurrency, len(tasks) * config.num_trials)
    if count <= 1:  # nothing to share out: the usual single-process run
        return asyncio.run(
            _run(config, domain, server, token, None, provider_limits, agent_cmd, timeout)
        )
    # The key check runs once, here: it imports litellm (seconds of CPU) before the fork, so
    # no worker imports it again, and a missing key is one sentence with no results file.
    check_models(models_called(runner.config, tasks, runner.grader.judge))
    preload(domain)
    pool = ProcessPool(runner, count, server=server, token=token, provider_limits=provider_limits)
    try:
        return asyncio.run(_drive_workers(runner, domain, config, pool))
    finally:
        pool.close()


async def _drive_workers(runner, domain, config: RunConfig, pool) -> list[dict[str, Any]]:
    try:
        await pool.start()
        runner.executor = pool
        return await _drive(runner, domain, config)
    finally:
        await pool.stop()


async def _drive(runner, domain, config: RunConfig) -> list[dict[str, Any]]:
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

        def on_done(sim: dict[str, Any]) -> None:
            nonlocal passed, finished, infra
            if sim.get("termination_reason") != INFRA:
                finished += 1
                passed += is_success((sim.get("reward_info") or {}).get("reward"))
            else:
                infra += 1
            progress.update(bar, advance=1, rate=progress_rate(passed, finished, infra))

        try:
            results = await runner.run(
                on_done, lambda todo: progress.update(bar, total=todo, visible=True)
            )
        except ConfigError:
            # The run stops before it did anything (say, a missing key found as the first
            # model request went out): the error alone, no empty bar.
            progress.update(bar, visible=False)
            raise
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


@app.command()
def evaluate(
    domain: str = typer.Option(..., "--domain"),
    input: Path = typer.Option(
        ..., "--input", help="A results file or a JSON list of simulations."
    ),
    save_to: Path = typer.Option(..., "--save-to", help="Where to write the re-graded results."),
    data_dir: Path = typer.Option(None, "--data-dir"),
    judge_llm: str = typer.Option(None, "--judge-llm", help=JUDGE_HELP),
    judge_llm_args: str = typer.Option(None, "--judge-llm-args"),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(None, "--server-token", envvar="TAU_SERVER_TOKEN"),
    max_concurrency: int = typer.Option(8, "--max-concurrency", min=1),
) -> None:
    """Re-grade saved simulations by replaying their tool calls on fresh episodes."""
    from conversation.reference_texts import reference_texts
    from harness.evaluate import check_domain, tasks_of
    from harness.evaluate_output import refuse_unfinished_run, write_regraded

    judge = _judge(judge_llm, judge_llm_args)
    try:
        document = load_results(input)
        check_domain(document, domain, input)
        loaded = _load_domain(domain, data_dir)
        if judge is not None and needs_judge(tasks_of(loaded, document)):
            check_models([judge_use(judge.for_texts(reference_texts(loaded.data_dir)))])
        with results_lock(save_to):  # no run may write there meanwhile
            refuse_unfinished_run(save_to)
            graded = asyncio.run(
                _evaluate(loaded, document, judge, server, server_token, max_concurrency)
            )
            write_regraded(save_to, graded)
    except (EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        typer.echo(f"interrupted; nothing was written to {save_to}", err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    print_summary(console, graded["simulations"], f"{domain}: re-graded {input.name}")
    console.print(f"re-graded results saved to {save_to}")


async def _evaluate(domain, document, judge, server, token, concurrency) -> dict[str, Any]:
    from harness.evaluate import regrade

    backend = await _backend(domain, server, token)
    try:
        return await regrade(backend, domain, Grader(backend, domain, judge), document, concurrency)
    finally:
        await backend.close()


@app.command()
def view(
    files: list[Path] = typer.Argument(..., help="One or more results files."),
    sim: str = typer.Option(
        None,
        "--sim",
        help="A task id (all its trials), a simulation id, or a unique prefix of one.",
    ),
    only_failed: bool = typer.Option(
        False, "--only-failed", help="Only simulations that did not pass (failed or errored)."
    ),
) -> None:
    """Show results files: summary, per-task pass rates and simulations, or conversations."""
    from harness.report.summary import PASS, outcome

    loaded: list[tuple[Path, dict[str, Any]]] = []
    for file in files:
        try:
            loaded.append((file, load_results(file)))
        except ResultsError as exc:
            _fail(str(exc))
    if sim is not None:
        found = _find_simulations([s for _, d in loaded for s in d["simulations"]], sim)
        if only_failed:
            found = [s for s in found if outcome(s) != PASS]
        if not found:
            _fail(f"no {'failed ' if only_failed else ''}simulation '{sim}' in the given files")
        for one in found:
            print_conversation(console, one)
        return
    for file, document in loaded:
        sims = document["simulations"]
        print_summary(console, sims, f"{file.name}", info=document.get("info"), label=str(file))
        console.print(task_rates_table(sims))
        shown = [s for s in sims if outcome(s) != PASS] if only_failed else sims
        console.print(simulations_table(shown))


def _find_simulations(sims: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """An exact simulation id, then an exact task id (every trial), then a unique id prefix."""
    exact = [s for s in sims if str(s.get("id")) == key]
    if exact:
        return exact
    by_task = [s for s in sims if str(s.get("task_id")) == key]
    if by_task:
        return sorted(by_task, key=lambda s: int(s.get("trial") or 0))
    prefixed = [s for s in sims if str(s.get("id", "")).startswith(key)]
    if len(prefixed) > 1:
        _fail(f"'{key}' matches {len(prefixed)} simulation ids; give more of the id")
    return prefixed


@app.command()
def report(
    files: list[Path] = typer.Argument(..., help="One or more results files (runs to compare)."),
    output: Path = typer.Option(
        None, "-o", "--output", help="Where to write (default: report.html; md/json: stdout)."
    ),
    fmt: str = typer.Option("html", "--format", help="html, md or json."),
) -> None:
    """Write a report: pass^k with 95% intervals, costs, a task x trial grid with every
    conversation, and paired tests between runs over the same tasks."""
    from harness.report.build import ReportError, write_report

    try:
        written = write_report(files, fmt, output)
    except (ReportError, ResultsError) as exc:
        _fail(str(exc))
    if written is None:
        return
    console.print(f"report written to {written}")


@app.command()
def play(
    domain: str = typer.Option(..., "--domain", help="mock, airline, retail or telecom."),
    task_id: str = typer.Option(..., "--task-id", help="The task to play."),
    side: str = typer.Option("agent", "--as", help="Your side: agent or user."),
    agent: str = typer.Option("llm", help="When you play the user: the llm or oracle agent."),
    agent_llm: str = typer.Option(DEFAULT_LLM, "--agent-llm"),
    agent_llm_args: str = typer.Option(None, "--agent-llm-args"),
    user: str = typer.Option("llm", help="When you play the agent: the llm or scripted user."),
    user_llm: str = typer.Option(DEFAULT_LLM, "--user-llm"),
    user_llm_args: str = typer.Option(None, "--user-llm-args"),
    save_to: Path = typer.Option(None, "--save-to", help="Also save the graded simulation."),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(None, "--server-token", envvar="TAU_SERVER_TOKEN"),
    data_dir: Path = typer.Option(None, "--data-dir", help="Reference data folder."),
) -> None:
    """Play one side of a task yourself, in the terminal, against the simulated other side;
    the episode runs over MCP and is graded at the end like any simulation."""
    from harness.play.game import PlaySettings
    from harness.play.game import play as play_game

    other = user if side == "agent" else agent
    settings = PlaySettings(
        task_id=task_id,
        side=side,
        other=other,
        other_llm=user_llm if side == "agent" else agent_llm,
        other_llm_args=_json_arg(
            "--user-llm-args" if side == "agent" else "--agent-llm-args",
            user_llm_args if side == "agent" else agent_llm_args,
        ),
        save_to=save_to,
    )

    async def go(loaded) -> dict[str, Any]:
        backend = await _backend(loaded, server, server_token)
        try:
            return await play_game(backend, loaded, settings, console)
        finally:
            await backend.close()

    try:
        loaded = _load_domain(domain, data_dir)
        sim = asyncio.run(go(loaded))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        _fail(str(exc))
    print_grade(console, sim)
    if save_to:
        console.print(f"saved to {save_to}")


def main() -> None:  # pragma: no cover
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.argv[1:] = bare_ray_flag(sys.argv[1:])
    app()


def bare_ray_flag(args: list[str]) -> list[str]:
    """`--ray` with no address (last, or followed by another option) means a local instance."""
    out = []
    for i, arg in enumerate(args):
        out.append(arg)
        if arg == "--ray" and (i + 1 == len(args) or args[i + 1].startswith("-")):
            out.append("local")
    return out
