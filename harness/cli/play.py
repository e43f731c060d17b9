"""`tau-harness play`: a person plays one side of a task in the terminal."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape

from tau_mcp.conversation.llm import DEFAULT_LLM
from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.cli.common import (
    DOMAIN_HELP,
    RETRIEVAL_HELP,
    RETRIEVAL_KWARGS_HELP,
    TASK_SET_HELP,
    console,
    fail,
    json_arg,
    load_domain,
    open_backend,
    retrieval_kwargs_option,
)
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.report import print_grade
from tau_mcp.harness.results import ResultsError
from tau_mcp.servers.domains.registry import domain_names
from tau_mcp.servers.engine.errors import EngineError


def ask(what: str, choices: list[str]) -> str:
    """The reference's `tau2 play` asks for what it needs; so does this, at a terminal."""
    if not sys.stdin.isatty():
        fail(f"give the {what} (--{what.replace(' ', '-')}); there is no terminal to ask at")
    shown = ", ".join(choices[:30]) + (
        f", ... ({len(choices) - 30} more)" if len(choices) > 30 else ""
    )
    console.print(f"{what}s: {shown}", highlight=False, markup=False)  # ids hold [brackets]
    while True:
        try:
            answer = console.input(f"{what}> ").strip()
        except (EOFError, KeyboardInterrupt):
            fail("play abandoned: no simulation was graded")
        if answer in choices:
            return answer
        console.print(f"[red]no {what} '{escape(answer)}'[/] (one of the above)", highlight=False)


def play(
    domain: str = typer.Option(
        None, "--domain", "-d", help=DOMAIN_HELP + " Asked for when left out."
    ),
    task_id: str = typer.Option(
        None, "--task-id", help="The task to play (asked for when left out)."
    ),
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
    retrieval_config: str = typer.Option(None, "--retrieval-config", help=RETRIEVAL_HELP),
    retrieval_kwargs: str = typer.Option(
        None, "--retrieval-config-kwargs", help=RETRIEVAL_KWARGS_HELP
    ),
    task_set_name: str = typer.Option(None, "--task-set-name", help=TASK_SET_HELP),
) -> None:
    """Play one side of a task yourself, in the terminal, against the simulated other side;
    the episode runs over MCP and is graded at the end like any simulation."""
    from tau_mcp.harness.play.game import play as play_game
    from tau_mcp.harness.play.game import play_config

    async def go(loaded, config) -> dict[str, Any]:
        backend = await open_backend(loaded, config.server, config.server_token)
        try:
            return await play_game(backend, loaded, config, console)
        finally:
            await backend.close()

    try:
        llm_args = {
            "agent_llm_args": json_arg("--agent-llm-args", agent_llm_args),
            "user_llm_args": json_arg("--user-llm-args", user_llm_args),
        }
        retrieval = retrieval_kwargs_option(retrieval_kwargs)
        domain = domain or ask("domain", list(domain_names()))
        loaded = load_domain(domain, data_dir, task_set=task_set_name)
        config = play_config(
            side,
            user if side == "agent" else agent,
            domain=domain,
            data_dir=data_dir,
            task_set_name=task_set_name,
            task_ids=[task_id or ask("task id", list(loaded.task_ids(None)))],
            agent_llm=agent_llm,
            user_llm=user_llm,
            save_to=save_to,
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval,
            server=server,
            server_token=server_token,
            **llm_args,
        )
        sim = asyncio.run(go(loaded, config))
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    print_grade(console, sim)
    if save_to:
        console.print(f"saved to {save_to}")
