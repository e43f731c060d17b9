"""Inspect tasks: `inspect eval tau_mcp/tau2 -T domain=airline --model openai/gpt-4.1`.

One parameterised task, `tau2`, and an alias per domain of the registry (`tau_mcp/tau_mcp_airline`
is `tau_mcp/tau2 -T domain=airline`), generated, not written per domain. Each sample is one tau2
task: the model under evaluation takes the agent's seat (`tau_mcp.harness.seat`, the one seat of
every outside participant: its tools are the episode's agent tools, called over MCP on a
tau-mcp server, in-process by default), it talks to our simulated user, and the scorer is our
grade (the reference's reward). The conversation runs in tau-mcp's orchestrator, so the turn
rules, limits and terminations are the benchmark's own; the transcript lands in the Inspect log
as the sample's messages. One runner (with its grader's cache of gold states) and one backend
serve every sample of a configuration.

Task options (`-T name=value`) are `RunConfig` fields: `domain`, `task_split` (or its earlier
name `split`), `task_ids`, `task_set_name`, `user` ("llm" or "scripted"), `user_llm`,
`user_llm_args`, `judge_llm`, `judge_llm_args`, `max_steps`, `max_errors`, `timeout`, `seed`,
`server`, `server_token`, `data_dir`, `retrieval_config`, `retrieval_kwargs`...
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from typing import Any

# As `tau-harness` does: litellm's bundled model price list, not a download at import.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Inspect counts tokens with tiktoken's o200k_base, which tiktoken would download on first
# use; litellm ships that file and points tiktoken's cache at it when this module loads.
import litellm.litellm_core_utils.default_encoding  # noqa: E402, F401, I001
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage as InspectMessage,
)
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    get_model,
)
from inspect_ai.scorer import Score, Target, mean, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import ToolCall as InspectToolCall
from inspect_ai.tool import ToolInfo as InspectToolInfo
from inspect_ai.tool import ToolParams

from tau_mcp.conversation.messages import ChatMessage, Message, ToolCall, ToolMessage, parse_message
from tau_mcp.harness.agents.base import Agent
from tau_mcp.harness.agents.llm_agent import conversation_prompt
from tau_mcp.harness.backends import ToolInfo
from tau_mcp.harness.config import RunConfig, select_tasks, trial_seed
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.integrations.stepwise import BackendKeeper, load_config_domain
from tau_mcp.harness.seat import OutsideAgent, Seat
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.domains.registry import domain_names
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.surfaces import ShownTool, View, as_shown, register_surface

GRADE_KEY = "tau_mcp_reward_info"
#: The seat's occupant as results name it (`info.agent_info.implementation`).
AGENT_NAME = "inspect"


# --- the agent: Inspect's model under evaluation -------------------------------------------
def _inline_refs(schema: Any, defs: dict[str, Any] | None = None) -> Any:
    """The schema with every local `$ref` replaced by its definition (Inspect's tool
    parameters carry no `$defs`)."""
    if isinstance(schema, dict):
        if defs is None:
            defs = {**schema.get("$defs", {}), **schema.get("definitions", {})}
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.rsplit("/", 1)[-1] in defs:
            target = _inline_refs(defs[ref.rsplit("/", 1)[-1]], defs)
            extra = {k: v for k, v in schema.items() if k != "$ref"}
            return {**target, **_inline_refs(extra, defs)}
        return {
            k: _inline_refs(v, defs) for k, v in schema.items() if k not in ("$defs", "definitions")
        }
    if isinstance(schema, list):
        return [_inline_refs(item, defs) for item in schema]
    return schema


def inspect_tool(tool: ToolInfo) -> InspectToolInfo:
    schema = _inline_refs(tool.input_schema or {"type": "object", "properties": {}})
    return InspectToolInfo(
        name=tool.name,
        description=tool.description or tool.name,
        parameters=ToolParams.model_validate(
            {
                "type": "object",
                "properties": schema.get("properties") or {},
                "required": schema.get("required") or [],
            }
        ),
    )


def to_inspect(message: Message) -> InspectMessage:
    """One of our messages as Inspect sees it (user tool calls and their results, which the
    agent never sees, are shown as plain user text when a transcript includes them)."""
    if isinstance(message, ToolMessage):
        if message.requestor != "assistant":
            return ChatMessageUser(content=f"[user tool result] {message.content or ''}")
        return ChatMessageTool(content=message.content or "", tool_call_id=message.id)
    if message.role == "system":
        return ChatMessageSystem(content=message.content or "")
    if message.role == "user":
        text = message.content or ""
        if message.tool_calls:
            calls = ", ".join(f"{c.name}({json.dumps(c.arguments)})" for c in message.tool_calls)
            text = f"{text}\n[user tool calls] {calls}".strip()
        return ChatMessageUser(content=text)
    calls = [
        InspectToolCall(id=c.id, function=c.name, arguments=dict(c.arguments))
        for c in message.tool_calls or []
    ]
    return ChatMessageAssistant(content=message.content or "", tool_calls=calls or None)


def _as_inspect_shows(tool: ShownTool) -> ShownTool:
    info = inspect_tool(ToolInfo(tool["name"], tool["description"], tool["parameters"]))
    return as_shown(info.name, info.description, info.parameters.model_dump(exclude_none=True))


def model_tools(tools: list[ToolInfo]) -> list[InspectToolInfo]:
    """The seat's agent tools as the model under evaluation is offered them."""
    return [inspect_tool(t) for t in tools]


def from_inspect(output: Any) -> ChatMessage:
    """The model's reply (an Inspect `ModelOutput`) as the agent's message."""
    reply = output.message
    calls = [
        ToolCall(id=c.id, name=c.function, arguments=dict(c.arguments or {}))
        for c in reply.tool_calls or []
    ]
    usage = output.usage.model_dump(exclude_none=True) if output.usage else None
    return ChatMessage(
        role="assistant", content=reply.text or None, tool_calls=calls or None, usage=usage
    )


async def _shown_to_inspect_model(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool]:
    from tau_mcp.harness.surface_probes import captured_participant

    agent = await captured_participant(domain, "agent", Agent, variant=variant)
    return [
        as_shown(t.name, t.description, t.parameters.model_dump(exclude_none=True))
        for t in model_tools(agent.context.tools)
    ]


#: The Inspect tasks: the tools the evaluated model is offered, in Inspect's own schema type.
INSPECT_TASKS = register_surface(
    "Inspect tasks (model tools)",
    ("agent",),
    _shown_to_inspect_model,
    rendering=_as_inspect_shows,
)


# --- one runner per configuration ------------------------------------------------------------
_runners: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[str, asyncio.Task[SimulationRunner]]
] = weakref.WeakKeyDictionary()


async def shared_runner(config: RunConfig) -> SimulationRunner:
    """The runner of `config` in this event loop: built by the first sample, with its backend
    (kept open in a task of its own until the loop ends), and shared by the rest."""
    loop = asyncio.get_running_loop()
    runners = _runners.setdefault(loop, {})
    key = config.model_dump_json()
    building = runners.get(key)
    if building is None:

        async def build() -> SimulationRunner:
            domain = load_config_domain(config)
            keeper = BackendKeeper()
            backend = await keeper.open(domain, config)
            return SimulationRunner(backend, domain, config, agent_factory=OutsideAgent)

        building = runners[key] = loop.create_task(build())
    try:
        return await asyncio.shield(building)
    except Exception:
        runners.pop(key, None)  # the next sample tries again
        raise


async def _simulate(seat: Seat, runner: SimulationRunner, task: Any, trial: int) -> dict[str, Any]:
    try:
        return await seat.host(runner.simulate(task, trial, trial_seed(runner.config.seed, trial)))
    finally:
        seat.close()


# --- the conversation and its grade --------------------------------------------------------
@solver
def tau_mcp_conversation(config: RunConfig):
    """Run the sample's tau2 task with the model in the agent's seat; keep the grade for the
    scorer."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        runner = await shared_runner(config)
        task = runner.domain.task(str(state.sample_id))
        system = conversation_prompt(runner.policy_for(task))
        seat = Seat("agent")
        run = asyncio.ensure_future(_simulate(seat, runner, task, max(0, state.epoch - 1)))
        try:
            await seat.turn()
            model = get_model()
            tools = model_tools(seat.participant.context.tools) if seat.participant else []
            while not seat.closed and seat.participant is not None:
                history = [ChatMessageSystem(content=system)]
                history += [to_inspect(m) for m in seat.participant.history]
                try:
                    output = await model.generate(history, tools=tools)
                except Exception as exc:  # noqa: BLE001 - the simulation records it
                    await seat.move(exc)
                    continue
                await seat.move(from_inspect(output))
            sim = await run
        finally:
            if not run.done():
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)
        state.messages = [
            ChatMessageSystem(content=system),
            *(to_inspect(parse_message(m)) for m in sim.messages or []),
        ]
        state.store.set(GRADE_KEY, sim.reward_info)
        state.metadata["termination_reason"] = sim.termination_reason
        if sim.infrastructure_error:
            state.metadata["error"] = (sim.info or {}).get("error")
        state.completed = True
        return state

    return solve


@scorer(metrics=[mean(), stderr()])
def tau_mcp_grade():
    """The tau2 reward of the conversation (0 or 1; 0 when it ended early)."""

    async def score(state: TaskState, target: Target) -> Score:
        info = state.store.get(GRADE_KEY)
        termination = state.metadata.get("termination_reason")
        if info is None:
            return Score(
                value=0.0,
                answer=termination,
                explanation=f"no grade: {state.metadata.get('error') or termination}",
            )
        return Score(
            value=float(info["reward"]),
            answer=termination,
            explanation=json.dumps(info.get("reward_breakdown")),
            metadata={"reward_info": info},
        )

    return score


# --- the task --------------------------------------------------------------------------------
#: Run options an Inspect task has no use for, and what Inspect has instead.
NOT_INSPECT = {
    "agent": "the model under evaluation is the agent (--model)",
    "agent_llm": "the model under evaluation is the agent (--model)",
    "agent_llm_args": "the model under evaluation is the agent (--model)",
    "agent_cmd": "the model under evaluation is the agent (--model)",
    "num_trials": "Inspect runs epochs (--epochs)",
    "max_concurrency": "Inspect runs samples at once (--max-samples)",
    "workers": "Inspect runs samples at once (--max-samples)",
    "ray": "Inspect runs samples at once (--max-samples)",
    "provider_limits": "Inspect limits its model's connections (--max-connections)",
    "max_retries": "Inspect retries samples (--retry-on-error)",
    "retry_delay": "Inspect retries samples (--retry-on-error)",
    "save_to": "the Inspect log holds the results (--log-dir)",
    "review": "the Inspect log holds the results (--log-dir)",
    "preset": "the Inspect log holds the results (--log-dir)",
}
#: Where the Inspect task's defaults differ from a run's: NL assertions are judged only when
#: asked for (`-T judge_llm=MODEL`), so a score needs no judge model or key.
INSPECT_DEFAULTS: dict[str, Any] = {"judge_llm": "none"}


def inspect_config(domain: str, split: str | None, options: dict[str, Any]) -> RunConfig:
    """The run a task's samples are, from its `-T` options (`RunConfig` fields)."""
    for name, instead in NOT_INSPECT.items():
        if name in options:
            raise ConfigError(f"the Inspect task does not take {name}: {instead}")
    if split is not None:
        if "task_split" in options:
            raise ConfigError("give task_split or its earlier name split, not both")
        options = {**options, "task_split": split}
    values = {**INSPECT_DEFAULTS, **options, "domain": domain, "max_retries": 0}
    return RunConfig(**values, agent=AGENT_NAME)


@task
def tau2(domain: str | None = None, split: str | None = None, **options: Any) -> Task:
    """tau2-bench on one domain (-T domain=NAME): the model under evaluation is the agent,
    our simulated user the customer, our grade the score."""
    if not domain:
        raise ConfigError("name the domain: -T domain=NAME (`tau-harness domains` lists them)")
    config = inspect_config(domain, split, options)
    loaded = load_config_domain(config)
    tasks = select_tasks(loaded, config)
    samples = [
        Sample(
            id=t.id,
            input=t.ticket or "(conversation with a simulated customer)",
            metadata={"domain": config.domain, "task_id": t.id},
        )
        for t in tasks
    ]
    name = f"tau_mcp_{config.domain}_{config.task_split or 'all'}"
    return Task(
        dataset=MemoryDataset(samples, name=name),
        solver=tau_mcp_conversation(config),
        scorer=tau_mcp_grade(),
    )


def _domain_alias(domain: str) -> Any:
    """`tau_mcp/tau_mcp_<domain>`: `tau_mcp/tau2` with `-T domain=<domain>`."""

    def alias(**options: Any) -> Task:
        return tau2(domain=domain, **options)

    alias.__name__ = alias.__qualname__ = f"tau_mcp_{domain}"
    alias.__doc__ = f"tau2-bench's {domain} domain: tau_mcp/tau2 -T domain={domain}."
    return task(alias)


# The domains this install knows when Inspect loads the module (packs of $TAU_DOMAIN_PATH
# included); any other domain is `tau_mcp/tau2 -T domain=NAME`.
DOMAIN_TASKS = {name: _domain_alias(name) for name in domain_names()}
globals().update({f"tau_mcp_{name}": factory for name, factory in DOMAIN_TASKS.items()})


def _namespace_for_editable_installs() -> None:
    """Inspect names an installed package's tasks `tau_mcp/<task>` (our top-level package), but
    an editable install gets bare names, and then `inspect eval tau_mcp/tau2` finds nothing.
    Register the namespaced names in that case too."""
    from inspect_ai._util.registry import registry_info

    for factory in (tau2, *DOMAIN_TASKS.values()):
        name = registry_info(factory).name
        if "/" not in name:
            task(name=f"tau_mcp/{name}")(factory)


_namespace_for_editable_installs()
