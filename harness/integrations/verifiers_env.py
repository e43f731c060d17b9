"""A verifiers environment over tau-mcp episodes: the policy model is the agent.

verifiers loads it the usual way, by module name plus arguments:

    vf-eval tau_mcp.harness.integrations.verifiers_env -a '{"domain": "airline", "split": "test"}' ...

or `verifiers.load_environment("tau_mcp.harness.integrations.verifiers_env", domain=...)`. Each dataset
row is one task. A rollout opens an episode (in-process by default, or on the `tau-server` at
`server`), lets our simulated user open the conversation, then hands every model message to the
same orchestrator `tau-harness run` uses (see `tau_mcp.harness.integrations.stepwise`): tool calls run on
the agent's MCP session, text goes to the simulated user, and the user's stop tokens, the step
limit and the error limit end the rollout. The reward is our grader's.

Needs the `verifiers` extra (verifiers 0.1.x, the `load_environment` generation).
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import verifiers as vf
import verifiers.types as vf_types
from datasets import Dataset

from tau_mcp.conversation.llm import DEFAULT_LLM
from tau_mcp.conversation.messages import ChatMessage, Message, ToolMessage
from tau_mcp.harness.agents.llm_agent import conversation_prompt
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.integrations.actions import ActionError, parse_action
from tau_mcp.harness.integrations.stepwise import (
    BackendKeeper,
    EpisodeSettings,
    PolicyDriver,
)
from tau_mcp.harness.integrations.verifiers_tools import verifiers_tool_defs
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.wiring import shared_domain
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError


def _for_policy(message: Message) -> vf_types.Message:
    """A message of the conversation as the policy, which plays the assistant, sees it: tool
    results addressed to it, the user's words, and its own (or the greeting, a task's history)."""
    if isinstance(message, ToolMessage):
        return vf_types.ToolMessage(tool_call_id=message.id, content=message.content or "")
    if message.role == "assistant":
        calls = [
            vf_types.ToolCall(id=c.id, name=c.name, arguments=json.dumps(c.arguments))
            for c in message.tool_calls or []
        ]
        return vf_types.AssistantMessage(content=message.content, tool_calls=calls or None)
    return vf_types.UserMessage(content=message.content or "")


def _after_last_assistant(messages: list[Message]) -> list[Message]:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ChatMessage) and message.role == "assistant":
            return messages[index + 1 :]
    return list(messages)


def _policy_message(message: Any) -> dict[str, Any]:
    """verifiers' assistant message (pydantic or dict) as an OpenAI message dict."""
    if hasattr(message, "model_dump"):
        message = message.model_dump()
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        calls.append(
            {
                "id": call.get("id"),
                "function": {"name": function.get("name"), "arguments": function.get("arguments")},
            }
        )
    return {"role": "assistant", "content": message.get("content"), "tool_calls": calls}


class TauMcpEnv(vf.MultiTurnEnv):
    """One rollout is one tau2 task played by the policy model as the agent."""

    def __init__(self, settings: EpisodeSettings, domain: Domain, task_ids: list[str], **kwargs):
        self.settings, self.domain = settings, domain
        variant = domain.resolve_variant(settings.retrieval_config, settings.retrieval_kwargs)

        def policy(task_id: str) -> str:
            if variant is None:
                return domain.policy(solo=False)
            return variant.policy(domain.task(task_id))

        rows = [
            {
                "prompt": [{"role": "system", "content": conversation_prompt(policy(task_id))}],
                "answer": "",
                "info": {"task_id": task_id, "domain": domain.name},
            }
            for task_id in task_ids
        ]
        dataset = Dataset.from_list(rows)
        tools = verifiers_tool_defs(domain, variant)
        rubric = vf.Rubric(funcs=[self.tau_reward], weights=[1.0])
        super().__init__(
            dataset=dataset, eval_dataset=dataset, tool_defs=tools, rubric=rubric, **kwargs
        )
        self._drivers: dict[str, PolicyDriver] = {}
        self._keepers: dict[asyncio.AbstractEventLoop, asyncio.Task] = {}

    # --- one rollout ------------------------------------------------------------------------
    async def _backend(self):
        """One backend per event loop, opened by the first rollout and shared by the rest."""
        loop = asyncio.get_running_loop()
        opening = self._keepers.get(loop)
        if opening is None:

            async def open_one() -> BackendKeeper:
                keeper = BackendKeeper()
                await keeper.open(self.domain, self.settings)
                return keeper

            opening = self._keepers[loop] = loop.create_task(open_one())
        try:
            keeper = await asyncio.shield(opening)
        except Exception:
            self._keepers.pop(loop, None)  # the next rollout tries again
            raise
        return keeper.backend

    @vf.teardown
    async def close_backends(self) -> None:
        """Close the backends this loop opened (others belong to loops already gone)."""
        loop = asyncio.get_running_loop()
        opening = self._keepers.pop(loop, None)
        if opening is not None and opening.done() and not opening.exception():
            await opening.result().close()
        self._keepers.clear()

    async def setup_state(self, state: vf.State) -> None:
        """Open the episode and let the simulated user speak first; what it says (after the
        greeting) joins the prompt."""
        task_id = state["info"]["task_id"]
        driver = PolicyDriver(self.settings, "agent", self.domain, await self._backend())
        self._drivers[state["trajectory_id"]] = driver
        seed = random.randrange(1_000_000)  # rollouts of one task should not share a user seed
        await driver.begin(driver.load_task(task_id), seed=seed)
        state["tau"] = {"task_id": task_id, "episode_id": driver.info()["episode_id"], "seed": seed}
        state["prompt"] = list(state["prompt"]) + [_for_policy(m) for m in driver.messages()]
        if driver.finished:
            self._finish(state, driver)
            state["final_env_response"] = []

    async def env_response(self, messages: vf.Messages, state: vf.State, **kwargs) -> vf.Messages:
        driver = self._drivers[state["trajectory_id"]]
        try:
            action = parse_action(_policy_message(messages[-1]), "assistant")
        except ActionError as exc:
            # The model produced nothing usable: the episode ends unrewarded, as an agent error.
            await driver.abandon()
            state["tau"]["termination_reason"] = "agent_error"
            state["tau"]["error"] = str(exc)
            state["tau_reward"] = 0.0
            state["final_env_response"] = [vf_types.UserMessage(content=f"[ended: {exc}]")]
            return state["final_env_response"]
        await driver.act(action)
        reply = [_for_policy(m) for m in _after_last_assistant(driver.messages())]
        if driver.finished:
            self._finish(state, driver)
            state["final_env_response"] = reply
        return reply

    def _finish(self, state: vf.State, driver: PolicyDriver) -> None:
        state["tau_reward"] = driver.reward
        state["tau"]["termination_reason"] = driver.termination
        state["tau"]["reward_info"] = (driver.result or {}).get("reward_info")

    @vf.cleanup
    async def close_episode(self, state: vf.State) -> None:
        """Delete an episode the rollout left unfinished (timeouts, verifiers' own limits)."""
        driver = self._drivers.pop(state.get("trajectory_id", ""), None)
        if driver is not None:
            await driver.close()

    async def tau_reward(self, state: vf.State) -> float:
        """Our grader's reward (0.0 for an episode that did not finish)."""
        return float(state.get("tau_reward") or 0.0)


def load_environment(
    domain: str = "mock",
    split: str | None = "base",
    user_llm: str = DEFAULT_LLM,
    user_llm_args: dict[str, Any] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_errors: int = DEFAULT_MAX_ERRORS,
    server: str | None = None,
    *,
    user: str = "llm",
    task_ids: list[str] | None = None,
    server_token: str | None = None,
    data_dir: str | Path | None = None,
    judge_llm: str | None = None,
    judge_llm_args: dict[str, Any] | None = None,
    retrieval_config: str | None = None,
    retrieval_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> TauMcpEnv:
    """The tau-mcp environment for one domain and task split (or the given `task_ids`);
    banking_knowledge takes its retrieval config."""
    settings = EpisodeSettings(
        retrieval_config=retrieval_config,
        retrieval_kwargs=retrieval_kwargs,
        domain=domain,
        task_split=split,
        user=user,
        user_llm=user_llm,
        user_llm_args=dict(user_llm_args or {}),
        judge_llm=judge_llm,
        judge_llm_args=dict(judge_llm_args or {}),
        data_dir=data_dir,
        server=server,
        server_token=server_token,
        max_steps=max_steps,
        max_errors=max_errors,
    )
    settings.check("agent")
    try:
        loaded = shared_domain(domain, data_dir)
        loaded.resolve_variant(retrieval_config, retrieval_kwargs)
        ids = list(task_ids) if task_ids else loaded.task_ids(split)
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    unknown = [t for t in ids if t not in loaded.tasks]
    if unknown:
        raise ConfigError(f"unknown task id(s) in domain '{domain}': {', '.join(unknown)}")
    return TauMcpEnv(settings, loaded, ids, **kwargs)
