"""`tau-harness`: run simulations, re-grade saved ones, and look at results."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from conversation.llm import DEFAULT_LLM
from harness.backends import InfrastructureError
from harness.grading import Grader, Judge
from harness.metrics import INFRA, is_success
from harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from harness.report import print_conversation, print_summary, simulations_table
from harness.results import ResultsError, atomic_write, load_results
from harness.runner import DEFAULT_SEED, ConfigError, RunConfig, Runner, select_tasks
from servers.engine.errors import EngineError

app = typer.Typer(
    help="Run and grade tau2 simulations against tau-mcp servers.", no_args_is_help=True
)
console = Console()

try:  # the data commands live in their own module; the harness works without them
    from harness.data_cli import data_app

    app.add_typer(data_app, name="data")
except ImportError:  # pragma: no cover - only while the module is missing
    pass

NO_JUDGE = {"none", "off", "no", ""}


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
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
    return value


def _judge(model: str | None, raw_args: str | None) -> Judge | None:
    if model is None or model.strip().lower() in NO_JUDGE:
        return None
    return Judge(model, {"temperature": 0.0, **_json_arg("--judge-llm-args", raw_args)})


def _load_domain(name: str, data_dir: Path | None):
    from servers.domains.registry import load_domains

    domain = load_domains([name], data_dir)[name]
    domain.load()  # canonical forms wait for the first grading: start-up reaches work sooner
    return domain


async def _backend(domain, server: str | None, token: str | None):
    from harness.backends.http import in_process_backend, remote_backend

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
    agent: str = typer.Option("llm", help="llm, solo, oracle, or a plug-in class as module:Class."),
    agent_llm: str = typer.Option(None, "--agent-llm", help="litellm model name for the agent."),
    agent_llm_args: str = typer.Option(
        None, "--agent-llm-args", help="JSON, e.g. '{\"temperature\": 0}'."
    ),
    user: str = typer.Option("llm", help="llm, scripted or dummy (solo runs)."),
    user_llm: str = typer.Option(
        None, "--user-llm", help="litellm model name for the user simulator."
    ),
    user_llm_args: str = typer.Option(
        None, "--user-llm-args", help="JSON arguments for the user's model."
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
    judge_llm: str = typer.Option(
        DEFAULT_LLM, "--judge-llm", help="Model judging NL assertions; 'none' skips them."
    ),
    judge_llm_args: str = typer.Option(
        None, "--judge-llm-args", help="JSON arguments for the judge's model."
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
        agent_llm_args=_json_arg("--agent-llm-args", agent_llm_args),
        user=user,
        user_llm=user_llm,
        user_llm_args=_json_arg("--user-llm-args", user_llm_args),
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
        loaded = _load_domain(domain, data_dir)
        asyncio.run(_run(config, loaded, server, server_token))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        _fail(str(exc))


def _default_results_path(domain: str, agent: str, user: str) -> Path:
    """results/<time>_<domain>_<agent>_<user>.json, safe as a file name."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    name = f"{stamp}_{domain}_{agent}_{user}".replace(":", "-").replace("/", "-")
    return Path("results") / f"{name}.json"


async def _run(config: RunConfig, domain, server: str | None, token: str | None) -> None:
    backend = await _backend(domain, server, token)
    try:
        runner = Runner(backend, domain, config)
        select_tasks(domain, config)  # bad task ids fail here, before any output
        passed = finished = 0
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("pass {task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        ) as progress:
            bar = progress.add_task(f"{domain.name}", total=None, rate="-")

            def on_done(sim: dict[str, Any]) -> None:
                nonlocal passed, finished
                if sim.get("termination_reason") != INFRA:
                    finished += 1
                    passed += is_success((sim.get("reward_info") or {}).get("reward"))
                rate = f"{passed / finished:.1%}" if finished else "-"
                progress.update(bar, advance=1, rate=rate)

            results = await runner.run(on_done, lambda todo: progress.update(bar, total=todo))
        print_summary(
            console, results.simulations, f"{domain.name}: {config.agent} agent, {config.user} user"
        )
        if config.save_to:
            console.print(f"results saved to {config.save_to}")
    finally:
        await backend.close()


@app.command()
def evaluate(
    domain: str = typer.Option(..., "--domain"),
    input: Path = typer.Option(
        ..., "--input", help="A results file or a JSON list of simulations."
    ),
    save_to: Path = typer.Option(..., "--save-to", help="Where to write the re-graded results."),
    data_dir: Path = typer.Option(None, "--data-dir"),
    judge_llm: str = typer.Option(
        DEFAULT_LLM, "--judge-llm", help="Model judging NL assertions; 'none' skips them."
    ),
    judge_llm_args: str = typer.Option(None, "--judge-llm-args"),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(None, "--server-token", envvar="TAU_SERVER_TOKEN"),
    max_concurrency: int = typer.Option(8, "--max-concurrency", min=1),
) -> None:
    """Re-grade saved simulations by replaying their tool calls on fresh episodes."""
    judge = _judge(judge_llm, judge_llm_args)
    try:
        document = load_results(input)
        loaded = _load_domain(domain, data_dir)
        graded = asyncio.run(
            _evaluate(loaded, document, judge, server, server_token, max_concurrency)
        )
    except (EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        _fail(str(exc))
    atomic_write(save_to, json.dumps(graded, indent=1, default=str))
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
    file: Path = typer.Argument(..., help="A results file."),
    sim: str = typer.Option(
        None, "--sim", help="Simulation id (or a unique prefix, or a task id)."
    ),
) -> None:
    """Show a results file's summary, its simulations, or one simulation's conversation."""
    try:
        document = load_results(file)
    except ResultsError as exc:
        _fail(str(exc))
    sims = document["simulations"]
    if sim is None:
        print_summary(console, sims, f"{file.name}")
        console.print(simulations_table(sims))
        return
    matches = [s for s in sims if str(s.get("id")) == sim] or [
        s for s in sims if str(s.get("id", "")).startswith(sim) or str(s.get("task_id")) == sim
    ]
    if not matches:
        _fail(f"no simulation '{sim}' in {file}")
    if len({str(s.get("id")) for s in matches}) > 1 and not all(
        str(s.get("task_id")) == sim for s in matches
    ):
        _fail(f"'{sim}' matches {len(matches)} simulations; give more of the id")
    print_conversation(console, matches[0])


def main() -> None:  # pragma: no cover
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    app()
