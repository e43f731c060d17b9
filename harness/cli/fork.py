"""`tau-harness fork`: a saved conversation's first N turns again, then live with another
agent, user or judge (`tau_mcp.harness.fork`)."""

from __future__ import annotations

from pathlib import Path

import typer

from tau_mcp.harness.cli.common import (
    RECORD_HELP,
    REPLAY_HELP,
    REPLAY_MISS_HELP,
    console,
    fail,
    json_arg,
    llm_args_option,
)

FORK_JUDGE_HELP = "Model judging NL assertions; 'none' skips them (default: the parent's judge)."


def fork(
    results: Path = typer.Argument(..., help="The parent run's results file."),
    sim: list[str] = typer.Option(
        ...,
        "--sim",
        help="A simulation to fork: its id, a unique id prefix, a task id (every trial), or "
        "all; repeat the option for several.",
    ),
    at_turn: int = typer.Option(
        ...,
        "--at-turn",
        min=1,
        help="Keep the parent's messages before turn N (turn_idx 0..N-1), make their tool calls "
        "again on a fresh episode, and continue live from there.",
    ),
    agent: str = typer.Option(
        None, "--agent", help="The agent from turn N (default: the parent's)."
    ),
    agent_llm: str = typer.Option(None, "--agent-llm", help="litellm model for the agent."),
    agent_llm_args: str = typer.Option(
        None, "--agent-llm-args", help="JSON object; replaces the parent's arguments."
    ),
    user: str = typer.Option(None, "--user", help="The user simulator (default: the parent's)."),
    user_llm: str = typer.Option(None, "--user-llm", help="litellm model for the user simulator."),
    user_llm_args: str = typer.Option(
        None, "--user-llm-args", help="JSON object; replaces the parent's arguments."
    ),
    judge_llm: str = typer.Option(None, "--judge-llm", help=FORK_JUDGE_HELP),
    judge_llm_args: str = typer.Option(
        None,
        "--judge-llm-args",
        help="JSON object; replaces the parent's judge arguments (laid over the judge's defaults).",
    ),
    max_steps: int = typer.Option(None, "--max-steps", min=1),
    max_concurrency: int = typer.Option(3, "--max-concurrency", min=1),
    max_retries: int = typer.Option(3, "--max-retries", min=0),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(
        None, "--server-token", envvar="TAU_SERVER_TOKEN", help="Bearer token."
    ),
    record: Path = typer.Option(None, "--record", metavar="DIR", help=RECORD_HELP),
    replay: Path = typer.Option(None, "--replay", metavar="DIR", help=REPLAY_HELP),
    replay_miss: str = typer.Option("fail", "--replay-miss", help=REPLAY_MISS_HELP),
    save_to: Path = typer.Option(
        None,
        "--save-to",
        help="The fork's results file (new; default: results/<time>_fork_<parent>_turn<N>.json).",
    ),
) -> None:
    """Fork saved conversations at a turn: replay their first N turns on a fresh episode,
    then continue live with the agent, user or judge you name. The fork is a results file
    whose header links it to its parent."""
    from tau_mcp.harness.backends import InfrastructureError
    from tau_mcp.harness.errors import ConfigError, ServerGone
    from tau_mcp.harness.fork import default_output, fork_config, plan_fork
    from tau_mcp.harness.fork import fork as run_fork
    from tau_mcp.harness.report import print_summary
    from tau_mcp.harness.results import ResultsError
    from tau_mcp.harness.run_outcome import INTERRUPTED_EXIT, infra_failure_message
    from tau_mcp.servers.engine.errors import EngineError

    try:
        plan = plan_fork(results, sim, at_turn)
        config = fork_config(
            plan,
            data_dir=data_dir,
            agent=agent,
            agent_llm=agent_llm,
            agent_llm_args=llm_args_option("--agent-llm-args", agent_llm_args),
            user=user,
            user_llm=user_llm,
            user_llm_args=llm_args_option("--user-llm-args", user_llm_args),
            judge_llm=judge_llm,
            judge_llm_args=json_arg("--judge-llm-args", judge_llm_args) or None,
            max_steps=max_steps,
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            server=server,
            server_token=server_token,
            record=record,
            replay=replay,
            replay_miss=replay_miss,
            save_to=save_to or default_output(results, at_turn),
        )
        forked = run_fork(plan, config)
    except ServerGone as exc:
        fail(str(exc))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        typer.echo("interrupted; the fork's results file holds what finished", err=True)
        raise typer.Exit(INTERRUPTED_EXIT) from None
    print_summary(
        console,
        forked.simulations,
        f"fork of {results.name} at turn {at_turn}: {config.agent} agent, {config.user} user",
        info=forked.header["info"],
        label=str(config.save_to),
    )
    console.print(f"fork saved to {config.save_to}")
    failure = infra_failure_message(forked.simulations, config.save_to)
    if failure:
        fail(failure)
