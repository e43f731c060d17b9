"""One played simulation: the person on one side, a simulated agent or user on the other, the
episode served over MCP and graded like any run."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from tau_mcp.conversation.messages import STOP
from tau_mcp.harness.backends import EpisodeBackend
from tau_mcp.harness.config import RunConfig, select_tasks
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.play.terminal import HumanAgent, HumanUser, Terminal
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.domain import Domain

HUMAN_AGENT = "tau_mcp.harness.play.terminal:HumanAgent"
HUMAN_USER = "tau_mcp.harness.play.terminal:HumanUser"
#: `--user scripted` in play: the scripted user as a customer a person can talk to.
SCRIPTED_CUSTOMER = "tau_mcp.simulator.scripted:ScriptedCustomer"


@dataclass
class PlaySettings:
    task_id: str
    side: str  # "agent" or "user": the person's side
    other: str  # the simulated side: llm/oracle agent, or llm/scripted user
    other_llm: str | None = None
    other_llm_args: dict[str, Any] = field(default_factory=dict)
    save_to: Path | None = None
    max_steps: int = 200
    max_errors: int = 10
    retrieval_config: str | None = None  # banking_knowledge
    retrieval_kwargs: dict[str, Any] | None = None


def play_config(domain: Domain, settings: PlaySettings) -> RunConfig:
    if settings.side == "agent":
        if settings.other not in ("llm", "scripted"):
            raise ConfigError("when you play the agent, the user is 'llm' or 'scripted'")
        agent = HUMAN_AGENT
        user = SCRIPTED_CUSTOMER if settings.other == "scripted" else settings.other
    elif settings.side == "user":
        if settings.other not in ("llm", "oracle"):
            raise ConfigError("when you play the user, the agent is 'llm' or 'oracle'")
        agent, user = settings.other, HUMAN_USER
    else:
        raise ConfigError(f"--as is 'agent' or 'user', not '{settings.side}'")
    simulated_llm = {"llm": settings.other_llm}
    config = RunConfig(
        domain=domain.name,
        agent=agent,
        agent_llm=simulated_llm.get(agent),
        agent_llm_args=settings.other_llm_args if agent == "llm" else {},
        user=user,
        user_llm=simulated_llm.get(user),
        user_llm_args=settings.other_llm_args if user == "llm" else {},
        task_split=None,
        task_ids=[settings.task_id],
        num_trials=1,
        max_concurrency=1,
        max_retries=0,
        max_steps=settings.max_steps,
        max_errors=settings.max_errors,
        save_to=settings.save_to,
        retrieval_config=settings.retrieval_config,
        retrieval_kwargs=settings.retrieval_kwargs,
    )
    select_tasks(domain, config)  # an unknown task id is one sentence, before anything starts
    return config


async def play(
    backend: EpisodeBackend, domain: Domain, settings: PlaySettings, console: Console
) -> dict[str, Any]:
    """Play one simulation and return it, graded."""
    terminal = Terminal(console)
    HumanAgent.terminal = HumanUser.terminal = terminal
    runner = Runner(SimulationRunner(backend, domain, play_config(domain, settings)))
    results = await runner.run()
    sim = results.simulations[-1]
    show_ending(terminal, sim.get("messages") or [], settings.side)
    return sim


def show_ending(terminal: Terminal, messages: list[dict[str, Any]], side: str) -> None:
    """What came after the person's last turn, which no prompt showed them: the other side's
    last words (often what ended the conversation), and results of the person's own calls.
    As during play, the other side's tool calls stay out of sight."""
    mine = "assistant" if side == "agent" else "user"
    last = max((i for i, m in enumerate(messages) if m.get("role") == mine), default=-1)
    other, style = ("customer", "green") if side == "agent" else ("agent", "cyan")
    for message in messages[last + 1 :]:
        content = message.get("content") or ""
        if message.get("role") == "tool":
            if message.get("requestor") == mine:
                flag = " (error)" if message.get("error") else ""
                terminal.show(f"result{flag}", "yellow", content)
        elif content:
            ended = " [ends the conversation]" if STOP in content else ""
            terminal.show(other, style, f"{content.replace(STOP, '').strip()}{ended}".strip())
