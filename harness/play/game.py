"""One played simulation: the person on one side, a simulated agent or user on the other, the
episode served over MCP and graded like any run."""

from __future__ import annotations

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


#: A played simulation is one conversation, tried once, with no NL-assertion judge unless asked.
PLAY_DEFAULTS: dict[str, Any] = {
    "task_split": None,
    "num_trials": 1,
    "max_concurrency": 1,
    "max_retries": 0,
    "max_steps": 200,
    "max_errors": 10,
    "judge_llm": "none",
}


def play_config(side: str, other: str, **options: Any) -> RunConfig:
    """The run of one played simulation: the person on `side` ("agent" or "user"), `other`
    (the llm or oracle agent, the llm or scripted user) on the other; `options` are any other
    `RunConfig` fields (`task_ids=[the task]`, models, data folder, server...). Only a
    simulated llm side keeps its model options."""
    if side == "agent":
        if other not in ("llm", "scripted"):
            raise ConfigError("when you play the agent, the user is 'llm' or 'scripted'")
        seats = {"agent": HUMAN_AGENT, "user": SCRIPTED_CUSTOMER if other == "scripted" else other}
    elif side == "user":
        if other not in ("llm", "oracle"):
            raise ConfigError("when you play the user, the agent is 'llm' or 'oracle'")
        seats = {"agent": other, "user": HUMAN_USER}
    else:
        raise ConfigError(f"--as is 'agent' or 'user', not '{side}'")
    for role, who in seats.items():
        if who != "llm":  # a person, the oracle or the scripted user: no model
            options[f"{role}_llm"], options[f"{role}_llm_args"] = None, {}
    return RunConfig(**{**PLAY_DEFAULTS, **options, **seats})


async def play(
    backend: EpisodeBackend, domain: Domain, config: RunConfig, console: Console
) -> dict[str, Any]:
    """Play one simulation and return it, graded."""
    select_tasks(domain, config)  # an unknown task id is one sentence, before anything starts
    terminal = Terminal(console)
    HumanAgent.terminal = HumanUser.terminal = terminal
    runner = Runner(SimulationRunner(backend, domain, config))
    results = await runner.run()
    sim = results.simulations[-1]
    side = "agent" if config.agent == HUMAN_AGENT else "user"
    show_ending(terminal, sim.get("messages") or [], side)
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
