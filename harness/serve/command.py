"""`tau-harness run --agent cmd --agent-cmd COMMAND`: an outside agent program per simulation.

The run hosts its simulations on a loopback MCP server with a fresh random token. For each
simulation it starts COMMAND through the shell with these environment variables:

    TAU_MCP_URL            full URL of the simulation's MCP endpoint
    TAU_MCP_TOKEN          bearer token for it (header `Authorization: Bearer $TAU_MCP_TOKEN`)
    TAU_MCP_CONFIG         a file with an `mcpServers` entry named `tau2` for that endpoint
                           (for `claude -p --mcp-config "$TAU_MCP_CONFIG"`)
    TAU_AGENT_PROMPT_FILE  a file holding the system prompt the `llm` agent would get
    TAU_TASK_ID, TAU_TRIAL, TAU_DOMAIN, TAU_SIMULATION_ID
    TAU_SIMULATION_URL     the simulation's HTTP resource (GET it, POST .../end)

and waits until the user ends the conversation, the command exits, or `--timeout` passes. A
conversation still open then is ended from the agent's side (agent stop) and graded. A command
that exits non-zero before its first move is an infrastructure failure (retried, never scored).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import signal
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from tau_mcp.harness import redaction
from tau_mcp.harness.agents import AgentContext
from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.results import SimulationRecord
from tau_mcp.harness.serve.host import hosted
from tau_mcp.harness.serve.simulation import Simulation, SimulationHub, serve_simulations
from tau_mcp.harness.simulate import SimulationRunner, with_retries
from tau_mcp.servers.engine.tasks import Task

MCP_SERVER_NAME = "tau2"
EXIT_GRACE_S = 10.0  # after the user ends, the program may still print its last words
OUTPUT_TAIL = 2000


def agent_system_prompt(simulations: SimulationRunner, task: Task) -> str:
    """The system prompt the `llm` agent would get on this task, from that agent's own builder."""
    from tau_mcp.harness.agents.llm_agent import LLMAgent

    context = AgentContext(
        task=task,
        domain=simulations.domain.name,
        policy=simulations.policy_for(task),
        tools=[],
        llm="outside-agent",
        solo=False,
    )
    return LLMAgent(context).system


class CommandExecutor:
    """A `SimulationExecutor` that runs, per simulation, an agent program against the
    simulation's MCP endpoint, hosted on loopback while the batch runs."""

    def __init__(
        self, simulations: SimulationRunner, command: str, timeout: float | None = None
    ) -> None:
        """`simulations` is the run's own (its config, policy and grader); the hosted
        simulations share its grader, so the run computes each gold state once."""
        if timeout is not None and timeout <= 0:
            raise ConfigError("--timeout must be a positive number of seconds")
        self.simulations = simulations
        self.domain = simulations.domain
        self.command, self.timeout = command, timeout
        hosted_runs = serve_simulations(
            simulations.backend, simulations.domain, simulations.config, simulations.grader
        )
        self.hub = SimulationHub(hosted_runs)
        self.token = secrets.token_urlsafe(24)
        redaction.remember(self.token)  # a program that prints its environment shows it
        self.base_url: str | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with hosted(self.hub, self.token) as base_url:
            self.base_url = base_url
            try:
                yield
            finally:
                await self.hub.close()

    async def simulate(self, task: Task, trial: int, seed: int) -> SimulationRecord:
        return await with_retries(
            lambda: self._attempt(task, trial), self.simulations.config, task, trial, seed
        )

    async def _attempt(self, task: Task, trial: int) -> SimulationRecord:
        simulation = self.hub.create(task.id, trial)
        with tempfile.TemporaryDirectory(prefix="tau-agent-") as folder:
            env = self._environment(simulation, Path(folder))
            log_path = Path(folder) / "output.log"
            with log_path.open("wb") as log:
                try:
                    process = await asyncio.create_subprocess_shell(
                        self.command,
                        env=env,
                        stdin=asyncio.subprocess.DEVNULL,
                        stdout=log,
                        stderr=asyncio.subprocess.STDOUT,
                        start_new_session=True,
                    )
                except OSError as exc:
                    await simulation.end()
                    raise InfrastructureError(f"cannot start the agent command: {exc}") from None
                outcome = await self._supervise(simulation, process)
            tail = log_path.read_bytes()[-OUTPUT_TAIL:].decode("utf-8", "replace")
        record = simulation.record
        assert record is not None
        self.hub.simulations.pop(simulation.id, None)  # the run keeps the record from here
        exit_code = outcome["exit_code"]
        if record.infrastructure_error:
            raise InfrastructureError(str((record.info or {}).get("error")))
        if outcome["moves"] == 0 and exit_code not in (0, None) and not outcome["timed_out"]:
            raise InfrastructureError(
                f"the agent command exited with code {exit_code} before its first call: "
                f"{tail.strip()[-500:]}"
            )
        record.info["agent_command"] = {**outcome, "output_tail": tail}
        return record

    def _environment(self, simulation: Simulation, folder: Path) -> dict[str, str]:
        assert self.base_url is not None
        url = self.base_url + simulation.mcp_path
        prompt = folder / "agent_system_prompt.md"
        prompt.write_text(agent_system_prompt(self.simulations, simulation.task), encoding="utf-8")
        config = folder / "mcp_config.json"
        entry = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {self.token}"}}
        config.write_text(json.dumps({"mcpServers": {MCP_SERVER_NAME: entry}}, indent=2))
        return {
            **os.environ,
            "TAU_MCP_URL": url,
            "TAU_MCP_TOKEN": self.token,
            "TAU_MCP_CONFIG": str(config),
            "TAU_AGENT_PROMPT_FILE": str(prompt),
            "TAU_TASK_ID": simulation.task.id,
            "TAU_TRIAL": str(simulation.trial),
            "TAU_DOMAIN": self.domain.name,
            "TAU_SIMULATION_ID": simulation.id,
            "TAU_SIMULATION_URL": f"{self.base_url}/simulations/{simulation.id}",
        }

    async def _supervise(
        self, simulation: Simulation, process: asyncio.subprocess.Process
    ) -> dict[str, Any]:
        """Wait for the first of: the conversation ends, the program exits, the timeout."""
        ended = asyncio.create_task(simulation.finished.wait())
        exited = asyncio.create_task(process.wait())
        try:
            done, _ = await asyncio.wait(
                {ended, exited}, timeout=self.timeout, return_when=asyncio.FIRST_COMPLETED
            )
            timed_out = not done
            if timed_out:
                await _stop(process)
            moves = simulation.channel.moves
            if not simulation.finished.is_set():
                await simulation.end()  # agent stop: the program quit or ran out of time
            if process.returncode is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(exited), EXIT_GRACE_S)
                await _stop(process)
        finally:
            for task in (ended, exited):
                task.cancel()
        return {"exit_code": process.returncode, "timed_out": timed_out, "moves": moves}


async def _stop(process: asyncio.subprocess.Process) -> None:
    """Terminate the program and everything it started; kill it if it lingers."""
    if process.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            await asyncio.wait_for(process.wait(), wait)
            return
        except TimeoutError:
            continue
