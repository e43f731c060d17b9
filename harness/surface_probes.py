"""What the harness's participants are shown, obtained through a real run (for the surface
registry, `tau_mcp.servers.surfaces`).

An agent or a simulated user is given its tools by the runner: the episode's MCP listing of
its side (both sides for a solo agent), the user's narrowed to the task's `user_tools` as the
reference does. `captured_participant` runs one simulation on the in-process server with the
participant class under test in its seat, keeps the participant the runner built, and cancels
the run at the participant's first turn (the runner's cleanup deletes the episode); its probe
then reads what that participant would send a model.

The surfaces of the participants the runner builds are registered here, next to the probe
that builds them through the runner: the `llm`, `solo` and `gt` agents (the runner imports the
agents, so their modules cannot import the runner's probe back) and the `llm` user
(`simulator/` does not import `harness/`).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.tasks import Task
from tau_mcp.servers.surfaces import ShownTool, View, from_openai, register_surface

Seat = Literal["agent", "user"]
PROBE_MODEL = "probe/no-model"  # never called: the run is cancelled at the first turn


def probe_task(domain: Domain, solo: bool = False) -> Task:
    """A task every participant can take: the first one (with a ticket, for solo runs)."""
    for task in domain.tasks.values():
        if not solo or task.ticket:
            return task
    raise LookupError(f"domain '{domain.name}' has no task with a ticket")


async def captured_participant(
    domain: Domain,
    seat: Seat,
    participant: type,
    *,
    solo: bool = False,
    task: Task | None = None,
    variant: str | None = None,
) -> Any:
    """The participant the runner builds for `seat` of a simulation on `domain` run with the
    retrieval config `variant` (see the module docstring). `participant` is an agent class for
    the agent seat, a user class for the user seat; the other seat is played without a model
    (scripted user, oracle agent)."""
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.harness.simulate import SimulationRunner

    built: asyncio.Future = asyncio.get_running_loop().create_future()

    class Captured(participant):  # type: ignore[misc, valid-type]
        def __init__(self, context) -> None:
            super().__init__(context)
            if not built.done():
                built.set_result(self)

        async def opening(self):
            await asyncio.Event().wait()

        async def respond(self, incoming):
            await asyncio.Event().wait()

    if seat == "agent":
        seats = {"agent_llm": PROBE_MODEL, "user": "dummy" if solo else "scripted"}
        kinds: dict[str, Any] = {"agent_factory": Captured}
    else:
        seats = {"agent": "oracle", "user_llm": PROBE_MODEL}
        kinds = {"user_factory": Captured}
    config = RunConfig(
        domain=domain.name, max_retries=0, retrieval_config=variant, judge_llm="none", **seats
    )
    backend = await in_process_backend({domain.name: domain})
    try:
        runner = SimulationRunner(backend, domain, config, **kinds)
        task = task or probe_task(domain, solo)
        run = asyncio.ensure_future(runner.simulate(task, 0, 0))
        try:
            await asyncio.wait({built, run}, return_when=asyncio.FIRST_COMPLETED)
            if not built.done():
                info = (run.result().info or {}) if run.done() else {}
                raise RuntimeError(f"no {seat} was built: {info.get('error', 'the run ended')}")
            return built.result()
        finally:
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
    finally:
        await backend.close()


async def _shown_to_user_model(domain: Domain, view: View, variant: str | None) -> list[ShownTool]:
    from tau_mcp.simulator.llm_user import LLMUser

    user = await captured_participant(domain, "user", LLMUser, variant=variant)
    return from_openai(user.tool_schemas)


#: The `llm` user simulator: the `tools` of its model requests (the probe task's `user_tools`
#: of the listing, as the reference narrows them).
LLM_USER = register_surface(
    "llm user (model requests)", ("user",), _shown_to_user_model, narrows_user_tools=True
)


async def _shown_to_agent_model(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool] | None:
    """The `tools` of the model requests of the agent the runner builds."""
    from tau_mcp.harness.agents.llm_agent import LLMAgent, SoloAgent

    if view == "solo":
        if not domain.supports_solo:
            return None
        agent = await captured_participant(domain, "agent", SoloAgent, solo=True, variant=variant)
    else:
        agent = await captured_participant(domain, "agent", LLMAgent, variant=variant)
    return from_openai(agent.tool_schemas)


#: The `llm` agent and the `solo` agent (agent tools, then user tools, then the finishing tool).
LLM_AGENT = register_surface("llm agent (model requests)", ("agent",), _shown_to_agent_model)
SOLO_AGENT = register_surface("solo agent (model requests)", ("solo",), _shown_to_agent_model)


async def _shown_to_gt_model(domain: Domain, view: View, variant: str | None) -> list[ShownTool]:
    from tau_mcp.conversation.plan import gold_actions
    from tau_mcp.harness.agents.gt_agent import GTAgent

    task = next(t for t in domain.tasks.values() if gold_actions(t))
    agent = await captured_participant(domain, "agent", GTAgent, task=task, variant=variant)
    return from_openai(agent.tool_schemas)


#: The ground-truth-guided agent: the `tools` of its model requests (the `llm` agent's).
GT_AGENT = register_surface("gt agent (model requests)", ("agent",), _shown_to_gt_model)
