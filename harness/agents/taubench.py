"""The original τ-bench's agents, one class per strategy: `tool-calling`, `act`, `react` and
`few-shot` (its `--agent-strategy`).

Each keeps the original's own message list and sends exactly what the original sends: the
policy (with the tools' JSON and an instruction for act/react, with examples for few-shot) as
the system prompt, the model's replies as it gave them (only the first tool call kept), tool
results as `tool` messages (act/react: as `user` messages after `API output: `), the user's
replies as `user` messages, the run's temperature and no seed or tool choice. Texts come from
the τ-bench data folder.

A reply the original cannot act on (tool-call arguments that are not a JSON object, an act/react
action without a name and arguments) crashes its task, which it records with reward 0: here it
ends the conversation with `agent_error` (reward 0).
"""

from __future__ import annotations

import json
from typing import Any

from tau_mcp.conversation import llm
from tau_mcp.conversation.errors import ParticipantFailed
from tau_mcp.conversation.messages import ChatMessage, ToolCall
from tau_mcp.harness.agents.base import Agent, AgentContext, Incoming

#: The original's action that answers the user, and its argument.
RESPOND = "respond"
RESPOND_FIELD = "content"
#: What act/react agents read their action after, and put before a tool's output.
ACTION_MARKER = "Action:"
OBSERVATION_PREFIX = "API output: "
#: How the few-shot agent lays its examples out after the policy.
FEW_SHOT_SEPARATOR = "\n\n"
FEW_SHOT_LABEL = "Example {number}:\n"
FEW_SHOTS = 5


class TauBenchAgent(Agent):
    """What the four strategies share: the model, the wire history, one action a turn."""

    implementation = "tau-bench"
    #: Whether the model is offered the tools natively (tool-calling, few-shot).
    native_tools = True

    def __init__(self, context: AgentContext) -> None:
        super().__init__(context)
        if not context.llm:
            raise ValueError(f"the {self.implementation} agent needs a model (--agent-llm)")
        self.tool_schemas = [t.openai_schema() for t in context.tools]
        self.wire: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt()}]
        self.pending_call: tuple[str, str] | None = None  # (id, name) of the call made

    def system_prompt(self) -> str:
        return self.context.policy

    async def respond(self, incoming: Incoming) -> ChatMessage:
        self.observe(incoming)
        reply = await llm.complete(
            self.context.llm or "",
            self.wire,
            tools=self.tool_schemas if self.native_tools else None,
            **self.context.llm_args,
        )
        message = self.act(reply.message)
        message.cost = reply.cost
        message.usage = reply.usage
        message.raw_data = {
            **(message.raw_data or {}),
            "model": reply.model,
            "generation_seconds": reply.seconds,
        }
        return message

    def observe(self, incoming: Incoming) -> None:
        if isinstance(incoming, list):
            call_id, name = self.pending_call or ("", "")
            for result in incoming:
                self.wire.append(self.observation(call_id, name, result.content or ""))
        elif incoming is not None:
            self.wire.append({"role": "user", "content": incoming.content})
        else:
            raise ParticipantFailed("a τ-bench agent answers a user; it does not work alone")

    def observation(self, call_id: str, name: str, content: str) -> dict[str, Any]:
        return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}

    def trajectory(self, last: Incoming) -> list[dict[str, Any]]:
        """The agent's messages as the original's results keep them (`traj`): with what
        answered its last message (the user's stop, the transfer's result), if anything did."""
        if last is not None:
            self.observe(last)
        return self.wire

    def act(self, message: dict[str, Any]) -> ChatMessage:
        """The agent's message for the model's reply, which joins the wire history."""
        calls = message.get("tool_calls") or []
        if not calls:
            self.wire.append(message)
            return ChatMessage(role="assistant", content=message.get("content"))
        first = calls[0]
        name = first["function"]["name"]
        arguments = _arguments(first["function"]["arguments"])
        if name == RESPOND:  # the original answers the user with it, keeping every call
            self.wire.append(message)
            return ChatMessage(role="assistant", content=_respond_content(arguments))
        self.wire.append({**message, "tool_calls": calls[:1]})
        self.pending_call = (first.get("id") or "", name)
        call = ToolCall(id=first.get("id") or "call_0", name=name, arguments=arguments)
        return ChatMessage(role="assistant", content=message.get("content"), tool_calls=[call])


class ToolCallingAgent(TauBenchAgent):
    """`tool-calling`: the policy as the system prompt, the tools offered natively."""

    implementation = "tool-calling"


class FewShotAgent(TauBenchAgent):
    """`few-shot`: tool-calling with five example conversations after the policy, drawn per
    simulation as the original's run draws them."""

    implementation = "few-shot"

    def system_prompt(self) -> str:
        displays, draw = self.context.few_shot_displays, self.context.draw
        if not displays or draw is None:
            raise ValueError("the few-shot agent needs its examples (--few-shot-displays-path)")
        shots = FEW_SHOT_SEPARATOR.join(
            FEW_SHOT_LABEL.format(number=n + 1) + displays[i] for n, i in enumerate(draw)
        )
        return f"{self.context.policy}{FEW_SHOT_SEPARATOR}{shots}"


class ReActAgent(TauBenchAgent):
    """`react`: the policy, the tools' JSON and the instruction in the system prompt; the model
    writes a thought and an action as JSON, read after the last `Action:`."""

    implementation = "react"
    native_tools = False
    reasoning = True

    def system_prompt(self) -> str:
        texts = self.context.taubench
        if texts is None:
            raise ValueError(f"the {self.implementation} agent needs the τ-bench data folder")
        return (
            self.context.policy
            + texts.tools_separator
            + json.dumps(self.tool_schemas)
            + texts.react_instruction(self.reasoning)
        )

    def observation(self, call_id: str, name: str, content: str) -> dict[str, Any]:
        return {"role": "user", "content": OBSERVATION_PREFIX + content}

    def act(self, message: dict[str, Any]) -> ChatMessage:
        text = message.get("content")
        if not isinstance(text, str):
            raise ParticipantFailed("the model's reply has no text to read an action from")
        action_text = text.split(ACTION_MARKER)[-1].strip()
        try:
            action = json.loads(action_text)
        except json.JSONDecodeError:  # the original answers the user with the text
            action = {"name": RESPOND, "arguments": {RESPOND_FIELD: action_text}}
        if not isinstance(action, dict) or "name" not in action or "arguments" not in action:
            raise ParticipantFailed("the action has no name and arguments")
        name, arguments = action["name"], action["arguments"]
        if not isinstance(name, str) or not isinstance(arguments, dict):
            raise ParticipantFailed("the action's name is not text or its arguments no object")
        self.wire.append(message)
        raw = {"text": text}
        if name == RESPOND:
            return ChatMessage(role="assistant", content=_respond_content(arguments), raw_data=raw)
        call_id = f"call_{len(self.wire)}"
        self.pending_call = (call_id, name)
        call = ToolCall(id=call_id, name=name, arguments=arguments)
        return ChatMessage(role="assistant", tool_calls=[call], raw_data=raw)


class ActAgent(ReActAgent):
    """`act`: react without the thought."""

    implementation = "act"
    reasoning = False


def _arguments(raw: Any) -> dict[str, Any]:
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        raise ParticipantFailed(f"tool-call arguments are not JSON: {str(raw)[:200]!r}") from None
    if not isinstance(value, dict):
        raise ParticipantFailed(f"tool-call arguments are not a JSON object: {str(raw)[:200]!r}")
    return value


def _respond_content(arguments: dict[str, Any]) -> str:
    content = arguments.get(RESPOND_FIELD)
    if not isinstance(content, str):
        raise ParticipantFailed(f"the {RESPOND} action has no text '{RESPOND_FIELD}'")
    return content


TAU_BENCH_AGENTS: dict[str, type[Agent]] = {
    "tool-calling": ToolCallingAgent,
    "act": ActAgent,
    "react": ReActAgent,
    "few-shot": FewShotAgent,
}
