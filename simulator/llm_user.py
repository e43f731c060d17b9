"""The model-driven user: the data folder's simulation guidelines plus the task's scenario.

With reference texts the guidelines file, persona slot, scenario layout and role flip follow
the reference's rules (see `tau_mcp.conversation.reference_prompts`); without them, our own layout.
"""

from __future__ import annotations

import hashlib

from tau_mcp.conversation import llm, reference_prompts
from tau_mcp.conversation.messages import ChatMessage, Message, ToolCall, ToolMessage
from tau_mcp.conversation.reference_texts import ReferenceTexts
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.scenario import scenario_text

PERSONA_SLOT = "<PERSONA_GUIDELINES>"


def user_prompt(guidelines: str, scenario: str) -> str:
    return f"{guidelines.replace(PERSONA_SLOT, '').strip()}\n\n# Your scenario\n{scenario}"


def as_seen_by_user(message: Message) -> dict:
    """The user model plays the `assistant` role: its own messages are the assistant's, the
    agent's are the `user`'s."""
    if isinstance(message, ToolMessage):
        return llm.to_openai(message)
    if message.role == "user":
        return llm.to_openai(message.model_copy(update={"role": "assistant"}))
    return {"role": "user", "content": message.content or ""}


#: Said after the system prompt when the user model answered a turn with nothing, for one more
#: try (tau2-bench PR #471's remedy, in our words). Never part of the trajectory.
EMPTY_TURN_REMINDER = (
    "\n\nNote: your previous reply was empty. Answer the agent now with a message (or a call "
    "of one of your tools). If your task is complete and you have nothing more to say, answer "
    "with ###STOP###."
)


class LLMUser(UserSimulator):
    implementation = "llm"
    #: Its prompt holds the data folder's user-simulator guidelines.
    reads_guidelines = True

    #: tau-mcp's version of this simulator's behaviour (the results header records it):
    #: 2 asks an empty turn again once, with EMPTY_TURN_REMINDER.
    version = "2"

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        if not context.llm:
            raise ValueError("the llm user needs a model (--user-llm)")
        self.texts = context.texts
        self.tool_schemas = [t.openai_schema() for t in context.tools]
        if self.texts is not None:
            # The guidelines file depends on whether this user has tools at all.
            path = reference_prompts.user_guidelines_path(self.texts, bool(self.tool_schemas))
            self.system = reference_prompts.user_system_prompt(
                self.texts,
                self.texts.data_file(path),
                reference_prompts.render_scenario(self.texts, context.task.user_scenario),
            )
            return
        if not context.guidelines:
            raise ValueError("the llm user needs the data folder's user simulator guidelines")
        self.system = user_prompt(context.guidelines, scenario_text(context.task.user_scenario))

    def request_messages(self) -> list[dict]:
        system = {"role": "system", "content": self.system}
        if self.texts is not None:
            flipped = (reference_prompts.flip_for_user(m) for m in self.history)
            return [system, *(m for m in flipped if m is not None)]
        return [system, *(as_seen_by_user(m) for m in self.history)]

    async def respond(self, incoming: ChatMessage | list[ToolMessage]) -> ChatMessage:
        self.record(incoming)
        messages = self.request_messages()
        args = dict(self.context.llm_args)
        if self.context.seed is not None:
            args["seed"] = self.context.seed  # the trial's seed wins, as for the agent
        reply = await llm.generate(
            self.context.llm, messages, tools=self.tool_schemas or None, role="user", **args
        )
        if not reply.has_text() and not reply.tool_calls:
            reply = await self._ask_again(messages, reply, args)
        if reply.tool_calls:
            calls = [
                ToolCall(id=tc.id, name=tc.name, arguments=tc.arguments, requestor="user")
                for tc in reply.tool_calls
            ]
            reply = reply.model_copy(update={"tool_calls": calls})
        self.history.append(reply)
        return reply

    async def _ask_again(self, messages: list[dict], empty: ChatMessage, args: dict) -> ChatMessage:
        """One more try at an empty turn, reminded; the reply carries the count
        (`raw_data.empty_retries`) and both tries' cost. Empty again, it is returned as it
        is: the orchestrator fails the attempt, as before."""
        reminded = [
            {"role": "system", "content": messages[0]["content"] + EMPTY_TURN_REMINDER},
            *messages[1:],
        ]
        reply = await llm.generate(
            self.context.llm, reminded, tools=self.tool_schemas or None, role="user", **args
        )
        raw = {**(reply.raw_data or {}), "empty_retries": 1}
        cost = (empty.cost or 0.0) + (reply.cost or 0.0)
        return reply.model_copy(update={"raw_data": raw, "cost": cost})


def identity(
    texts: ReferenceTexts | None, guidelines: str | None, has_tools: bool
) -> dict[str, str]:
    """What the llm user is told whatever the task: the sha256 of its system prompt with the
    scenario left as a slot, and of its guidelines."""
    slot = "{scenario}"
    if texts is not None:
        path = reference_prompts.user_guidelines_path(texts, has_tools)
        guidelines = texts.data_file(path)
        prompt = reference_prompts.user_system_prompt(texts, guidelines, slot)
    else:
        prompt = user_prompt(guidelines or "", slot)
    return {"prompt_sha256": _sha(prompt), "guidelines_sha256": _sha(guidelines or "")}


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
