"""A verifiers environment over tau-mcp episodes: the policy model is the agent.

verifiers loads it the usual way, by module name plus arguments:

    vf-eval tau_mcp.harness.integrations.verifiers_env -a '{"domain": "airline", "task_split": "test"}' ...

or `verifiers.load_environment("tau_mcp.harness.integrations.verifiers_env", domain=...)`. Each dataset
row is one task. A rollout opens an episode (in-process by default, or on the `tau-server` at
`server`), lets our simulated user open the conversation, then hands every model message to the
same orchestrator `tau-harness run` uses (see `tau_mcp.harness.integrations.stepwise`): tool calls run on
the agent's MCP session, text goes to the simulated user, and the user's stop tokens, the step
limit and the error limit end the rollout (the policy ends it by the one rule of
`tau_mcp.harness.seat`). The reward is our grader's. The environment's arguments are `RunConfig`
fields (`task_set_name`, `task_split`, `task_ids`, `user_llm`, `server`, ...); any others go
to verifiers' `MultiTurnEnv`.

Needs the `verifiers` extra (verifiers 0.1.x, the `load_environment` generation).
"""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import verifiers as vf
import verifiers.types as vf_types
from datasets import Dataset

from tau_mcp.conversation.messages import ChatMessage, Message, ToolMessage
from tau_mcp.harness.agents.llm_agent import conversation_prompt
from tau_mcp.harness.config import RunConfig, select_tasks
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.integrations.actions import ActionError, parse_action
from tau_mcp.harness.integrations.stepwise import (
    BackendKeeper,
    PolicyDriver,
    load_config_domain,
    run_options,
    stepwise_config,
)
from tau_mcp.harness.integrations.verifiers_tools import verifiers_tool_defs
from tau_mcp.servers.engine.domain import Domain


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

    def __init__(self, config: RunConfig, domain: Domain, task_ids: list[str], **kwargs):
        self.config, self.domain = config, domain
        variant = domain.resolve_variant(config.retrieval_config, config.retrieval_kwargs)

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
                await keeper.open(self.domain, self.config)
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
        driver = PolicyDriver(self.config, "agent", self.domain, await self._backend())
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
    domain: str | None = None, split: str | None = None, **options: Any
) -> TauMcpEnv:
    """The tau-mcp environment for one domain: a row per task the options select
    (`task_split`, default base; `task_ids`; `task_set_name`); the other `RunConfig` fields
    set the episodes (`user_llm`, `judge_llm`, `server`, `retrieval_config`...), and anything
    else goes to verifiers' `MultiTurnEnv`. `split` is `task_split`'s earlier name."""
    run, env_kwargs = run_options(options)
    if split is not None:
        if "task_split" in run:
            raise ConfigError("give task_split or its earlier name split, not both")
        run["task_split"] = split
    config = stepwise_config("agent", "the verifiers environment", {"domain": domain, **run})
    loaded = load_config_domain(config)
    driver_ids = [t.id for t in select_tasks(loaded, config)]
    return TauMcpEnv(config, loaded, driver_ids, **env_kwargs)
