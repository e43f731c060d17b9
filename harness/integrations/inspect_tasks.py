"""Inspect tasks: `inspect eval tau_mcp/tau_mcp_airline --model openai/gpt-4.1`.

One task per domain. Each sample is one tau2 task: the model under evaluation is the agent
(its tools are the episode's agent tools, called over MCP on a tau-mcp server, in-process by
default), it talks to our simulated user, and the scorer is our grade (the reference's reward).
The conversation runs in tau-mcp's orchestrator, so the turn rules, limits and terminations are
the benchmark's own; the transcript lands in the Inspect log as the sample's messages.

Task options (`-T name=value`): split, task_ids, user ("llm" or "scripted"), user_llm,
user_llm_args, judge_llm, max_steps, max_errors, seed, server (a running tau-server URL),
server_token, data_dir.
"""

from __future__ import annotations

import json
import os
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

from tau_mcp.conversation.llm import DEFAULT_LLM
from tau_mcp.conversation.messages import ChatMessage, Message, ToolCall, ToolMessage
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming
from tau_mcp.harness.agents.llm_agent import conversation_prompt
from tau_mcp.harness.backends import ToolInfo
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.surfaces import ShownTool, View, as_shown, register_surface

AGENT_CLASS = "tau_mcp.harness.integrations.inspect_tasks:InspectAgent"
GRADE_KEY = "tau_mcp_reward_info"


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


async def _shown_to_inspect_model(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool]:
    from tau_mcp.harness.surface_probes import captured_participant

    agent = await captured_participant(domain, "agent", InspectAgent, variant=variant)
    return [
        as_shown(t.name, t.description, t.parameters.model_dump(exclude_none=True))
        for t in agent.tools
    ]


class InspectAgent(Agent):
    """The Inspect model being evaluated, as a tau-mcp agent."""

    implementation = "inspect"

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        self.system = conversation_prompt(context.policy)
        self.tools = [inspect_tool(t) for t in context.tools]

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.record(incoming)
        messages = [ChatMessageSystem(content=self.system), *map(to_inspect, self.history)]
        output = await get_model().generate(messages, tools=self.tools)
        reply = output.message
        calls = [
            ToolCall(id=c.id, name=c.function, arguments=dict(c.arguments or {}))
            for c in reply.tool_calls or []
        ]
        usage = output.usage.model_dump(exclude_none=True) if output.usage else None
        message = ChatMessage(
            role="assistant",
            content=reply.text or None,
            tool_calls=calls or None,
            usage=usage,
        )
        self.history.append(message)
        return message


#: The Inspect tasks: the tools the evaluated model is offered, in Inspect's own schema type.
INSPECT_TASKS = register_surface(
    "Inspect tasks (model tools)",
    ("agent",),
    _shown_to_inspect_model,
    rendering=_as_inspect_shows,
)


# --- the conversation and its grade --------------------------------------------------------
@solver
def tau_mcp_conversation(
    domain_name: str,
    user: str = "llm",
    user_llm: str | None = None,
    user_llm_args: dict[str, Any] | None = None,
    judge_llm: str | None = None,
    max_steps: int | None = None,
    max_errors: int | None = None,
    seed: int | None = None,
    server: str | None = None,
    server_token: str | None = None,
    data_dir: str | None = None,
    retrieval_config: str | None = None,
    retrieval_kwargs: dict[str, Any] | None = None,
):
    """Run the sample's tau2 task with the model as the agent; keep the grade for the scorer."""
    from tau_mcp.harness.config import DEFAULT_SEED, RunConfig, trial_seed
    from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
    from tau_mcp.harness.simulate import SimulationRunner
    from tau_mcp.harness.wiring import build_judge, open_backend, shared_domain

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        domain = shared_domain(domain_name, data_dir)
        config = RunConfig(
            domain=domain_name,
            agent=AGENT_CLASS,
            user=user,
            user_llm=user_llm if user == "llm" else None,
            user_llm_args=dict(user_llm_args or {}),
            max_steps=max_steps or DEFAULT_MAX_STEPS,
            max_errors=max_errors or DEFAULT_MAX_ERRORS,
            seed=DEFAULT_SEED if seed is None else seed,
            judge=build_judge(judge_llm or "none", {"temperature": 0.0}),
            max_retries=0,
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval_kwargs,
        )
        task = domain.task(str(state.sample_id))
        backend = await open_backend(domain, server, server_token)
        try:
            runner = SimulationRunner(backend, domain, config)
            trial = max(0, state.epoch - 1)
            sim = await runner.simulate(task, trial, trial_seed(config.seed, trial))
        finally:
            await backend.close()
        from tau_mcp.conversation.messages import parse_message

        state.messages = [
            ChatMessageSystem(content=conversation_prompt(runner.policy_for(task))),
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


# --- the tasks ------------------------------------------------------------------------------
def _ids(task_ids: Any) -> list[str] | None:
    """Task ids from `-T task_ids=...`: a list, or one comma-separated value (Inspect reads
    `-T task_ids=7` as the number 7)."""
    if task_ids is None:
        return None
    values = [str(t) for t in task_ids] if isinstance(task_ids, list | tuple) else [str(task_ids)]
    return [p for v in values for p in v.replace(",", " ").split() if p] or None


def tau_mcp_task(
    domain_name: str,
    split: str | None = "base",
    task_ids: str | list[str] | None = None,
    user: str = "llm",
    user_llm: str | None = DEFAULT_LLM,
    user_llm_args: dict[str, Any] | None = None,
    judge_llm: str | None = None,
    max_steps: int | None = None,
    max_errors: int | None = None,
    seed: int | None = None,
    server: str | None = None,
    server_token: str | None = None,
    data_dir: str | None = None,
    retrieval_config: str | None = None,
    retrieval_kwargs: dict[str, Any] | None = None,
) -> Task:
    from tau_mcp.harness.config import RunConfig, select_tasks
    from tau_mcp.harness.errors import ConfigError
    from tau_mcp.harness.wiring import shared_domain

    domain = shared_domain(domain_name, data_dir)
    try:  # an unknown config, or one that cannot run here, is one sentence before any sample
        domain.resolve_variant(retrieval_config, retrieval_kwargs)
    except EngineError as exc:
        raise ValueError(str(exc)) from None
    ids = _ids(task_ids)
    selection = RunConfig(domain=domain_name, task_split=split, task_ids=ids)
    try:
        tasks = select_tasks(domain, selection)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    if user == "llm" and not user_llm:
        raise ValueError("the llm user needs a model: pass -T user_llm=MODEL")
    samples = [
        Sample(
            id=t.id,
            input=t.ticket or "(conversation with a simulated customer)",
            metadata={"domain": domain_name, "task_id": t.id},
        )
        for t in tasks
    ]
    return Task(
        dataset=MemoryDataset(samples, name=f"tau_mcp_{domain_name}_{split or 'all'}"),
        solver=tau_mcp_conversation(
            domain_name,
            user=user,
            user_llm=user_llm,
            user_llm_args=user_llm_args,
            judge_llm=judge_llm,
            max_steps=max_steps,
            max_errors=max_errors,
            seed=seed,
            server=server,
            server_token=server_token,
            data_dir=data_dir,
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval_kwargs,
        ),
        scorer=tau_mcp_grade(),
    )


@task
def tau_mcp_mock(
    split: str = "base",
    task_ids: str | list[str] | None = None,
    user_llm: str = DEFAULT_LLM,
    **options: Any,
) -> Task:
    """tau2 mock domain (task tracker)."""
    return tau_mcp_task("mock", split, task_ids, user_llm=user_llm, **options)


@task
def tau_mcp_airline(
    split: str = "base",
    task_ids: str | list[str] | None = None,
    user_llm: str = DEFAULT_LLM,
    **options: Any,
) -> Task:
    """tau2 airline domain."""
    return tau_mcp_task("airline", split, task_ids, user_llm=user_llm, **options)


@task
def tau_mcp_retail(
    split: str = "base",
    task_ids: str | list[str] | None = None,
    user_llm: str = DEFAULT_LLM,
    **options: Any,
) -> Task:
    """tau2 retail domain."""
    return tau_mcp_task("retail", split, task_ids, user_llm=user_llm, **options)


@task
def tau_mcp_telecom(
    split: str = "base",
    task_ids: str | list[str] | None = None,
    user_llm: str = DEFAULT_LLM,
    **options: Any,
) -> Task:
    """tau2 telecom domain (the simulated user acts on their phone with user tools)."""
    return tau_mcp_task("telecom", split, task_ids, user_llm=user_llm, **options)


@task
def tau_mcp_banking_knowledge(
    split: str = "base",
    task_ids: str | list[str] | None = None,
    user_llm: str = DEFAULT_LLM,
    retrieval_config: str | None = None,
    **options: Any,
) -> Task:
    """tau2 banking_knowledge domain (a knowledge base the agent searches; -T
    retrieval_config=bm25_grep and the other offline configs need no key)."""
    return tau_mcp_task(
        "banking_knowledge",
        split,
        task_ids,
        user_llm=user_llm,
        retrieval_config=retrieval_config,
        **options,
    )


def _namespace_for_editable_installs() -> None:
    """Inspect names an installed package's tasks `tau_mcp/<task>` (our top-level package), but
    an editable install gets bare names, and then `inspect eval tau_mcp/tau_mcp_mock` finds
    nothing. Register the namespaced names in that case too."""
    from inspect_ai._util.registry import registry_info

    for factory in (
        tau_mcp_mock,
        tau_mcp_airline,
        tau_mcp_retail,
        tau_mcp_telecom,
        tau_mcp_banking_knowledge,
    ):
        name = registry_info(factory).name
        if "/" not in name:
            task(name=f"tau_mcp/{name}")(factory)


_namespace_for_editable_installs()
