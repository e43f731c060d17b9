"""The original τ-bench's simulated users, one class per strategy: `llm`, `react`, `verify`,
`reflection` (its `--user-strategy`).

Each keeps the original's own message list (its system prompt with the task's instruction, the
opening line, its replies as the model's messages and the agent's replies as `user` messages)
and sends exactly what the original sends: no temperature, no seed, only the run's user llm
args. The prompts come from the τ-bench data folder (`conversation.taubench_texts`).

What the original does on a reply it cannot parse (a react reply without its markers, a
reflection without `Response:`) is to crash the task, which it records with reward 0; here
that ends the conversation with `user_error` (reward 0).
"""

from __future__ import annotations

from typing import Any

from tau_mcp.conversation import llm
from tau_mcp.conversation.errors import ParticipantFailed
from tau_mcp.conversation.messages import STOP, ChatMessage, ToolMessage
from tau_mcp.conversation.taubench_texts import TauBenchTexts
from tau_mcp.simulator.base import UserContext, UserSimulator
from tau_mcp.simulator.scenario import scenario_text

# The markers the original's parsers split a reply on.
THOUGHT = "Thought:"
USER_RESPONSE = "User Response:"
REFLECTED_RESPONSE = "Response:"
VERIFIED = "true"


def instruction_of(context: UserContext) -> str:
    """The task's instruction: a τ-bench task's own text, else the scenario as text."""
    scenario = context.task.user_scenario
    raw = scenario.model_dump() if hasattr(scenario, "model_dump") else scenario
    instructions = raw.get("instructions") if isinstance(raw, dict) else None
    return instructions if isinstance(instructions, str) else scenario_text(scenario)


class TauBenchUser(UserSimulator):
    """The `llm` strategy: the model's reply is the user's message."""

    implementation = "llm"
    strategy = "llm"
    #: Resets the original runs while building the simulator (react's constructor runs two).
    resets_per_build = 1

    def __init__(self, context: UserContext) -> None:
        super().__init__(context)
        if not context.llm:
            raise ValueError(f"the {self.strategy} user needs a model (--user-llm)")
        if context.taubench is None:
            raise ValueError(
                f"the τ-bench {self.strategy} user needs the τ-bench data folder (TAUBENCH_DATA_DIR)"
            )
        self.texts: TauBenchTexts = context.taubench
        self.prompt = self.texts.users[self.strategy]
        self.wire: list[dict[str, Any]] = []
        self._cost = 0.0
        self._usage: dict[str, int] = {}

    # --- the conversation -------------------------------------------------------------------
    async def opening(self, line: str) -> ChatMessage:
        for _ in range(self.context.builds * self.resets_per_build):
            await self._reset(None)
        return self._message(await self._reset(instruction_of(self.context)))

    async def respond(self, incoming: ChatMessage | list[ToolMessage]) -> ChatMessage:
        if isinstance(incoming, list):
            raise ParticipantFailed("the τ-bench user has no tools")
        self.wire.append({"role": "user", "content": incoming.content})
        return self._message(await self.next_message(self.wire))

    async def _reset(self, instruction: str | None) -> str | None:
        self.wire = [
            {"role": "system", "content": self.prompt.system(instruction)},
            {"role": "user", "content": self.texts.opening},
        ]
        return await self.next_message(self.wire)

    def _message(self, content: str | None) -> ChatMessage:
        message = ChatMessage(
            role="user",
            content=content,
            cost=self._cost,
            usage=dict(self._usage) or None,
            raw_data={"model": self.context.llm},
        )
        self._cost, self._usage = 0.0, {}
        return message

    # --- model calls ------------------------------------------------------------------------
    async def _call(self, messages: list[dict[str, Any]]) -> llm.Completion:
        reply = await llm.complete(self.context.llm or "", messages, **self.context.llm_args)
        self._cost += reply.cost
        for key, value in (reply.usage or {}).items():
            self._usage[key] = self._usage.get(key, 0) + int(value or 0)
        return reply

    async def generate(self, messages: list[dict[str, Any]]) -> str | None:
        """One reply to `messages`, kept in the user's own history."""
        reply = await self._call(messages)
        self.wire.append(reply.message)
        return reply.content

    async def next_message(self, messages: list[dict[str, Any]]) -> str | None:
        return await self.generate(messages)

    async def verify(self, response: str, messages: list[dict[str, Any]]) -> bool:
        prompt = self.texts.verify.render(self.texts.transcript(messages), response)
        reply = await self._call([{"role": "user", "content": prompt}])
        return VERIFIED in (reply.content or "").lower()

    async def reflect(self, response: str, messages: list[dict[str, Any]]) -> str:
        prompt = self.texts.reflect.render(self.texts.transcript(messages), response)
        reply = await self._call([{"role": "user", "content": prompt}])
        parts = (reply.content or "").split(REFLECTED_RESPONSE)
        if len(parts) != 2:
            raise ParticipantFailed(
                f"the reflection has {len(parts) - 1} '{REFLECTED_RESPONSE}' markers, not one"
            )
        return parts[1].strip()


class ReactUser(TauBenchUser):
    """The `react` strategy: the model writes a thought and a response; the text after the
    thought marker is what the agent gets (the original splits on `Thought:` first, so the
    agent sees the `User Response:` line too)."""

    implementation = "react"
    strategy = "react"
    resets_per_build = 2

    async def next_message(self, messages: list[dict[str, Any]]) -> str | None:
        return parse_react(await self.generate(messages) or "")


def parse_react(response: str) -> str:
    if STOP in response:
        return STOP
    for marker in (THOUGHT, USER_RESPONSE):
        if marker in response:
            parts = response.split(marker)
            if len(parts) != 2:
                raise ParticipantFailed(f"the user's reply has {len(parts) - 1} '{marker}' markers")
            return parts[1].strip()
    raise ParticipantFailed(f"the user's reply has neither '{THOUGHT}' nor '{USER_RESPONSE}'")


class VerifyUser(TauBenchUser):
    """The `verify` strategy: up to three replies, each checked by the model; the first one
    found satisfactory is kept in the user's history, else the last is sent without being kept."""

    implementation = "verify"
    strategy = "verify"
    attempts = 3

    async def next_message(self, messages: list[dict[str, Any]]) -> str | None:
        reply = None
        for _ in range(self.attempts):
            reply = await self._call(messages)
            if await self.verify(self.texts.message_text(reply.content), messages):
                self.wire.append(reply.message)
                return reply.content
        assert reply is not None
        return reply.content


class ReflectionUser(TauBenchUser):
    """The `reflection` strategy: a reply the model finds unsatisfactory is reflected on once
    and generated again; every generation is kept in the user's own history."""

    implementation = "reflection"
    strategy = "reflection"
    attempts = 2

    async def next_message(self, messages: list[dict[str, Any]]) -> str | None:
        draft = list(messages)
        initial = await self.generate(draft)
        if await self.verify(str(initial), draft):
            return initial
        for _ in range(1, self.attempts):
            draft.append({"role": "user", "content": await self.reflect(str(initial), draft)})
            again = await self.generate(draft)
            if await self.verify(str(again), draft):
                return again
        return initial


TAU_BENCH_USERS: dict[str, type[UserSimulator]] = {
    "llm": TauBenchUser,
    "react": ReactUser,
    "verify": VerifyUser,
    "reflection": ReflectionUser,
}
