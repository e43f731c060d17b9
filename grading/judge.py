"""The LLM judge for natural-language assertions about a conversation.

With reference texts it sends the reference's one request per simulation (its instructions,
the whole trajectory, the outcomes) and reads the reply the reference's way; without them it
uses our own prompt and reply layout.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from tau_mcp.conversation import llm, reference_prompts
from tau_mcp.conversation.errors import ConfigError, InfrastructureError
from tau_mcp.conversation.messages import ChatMessage, Message
from tau_mcp.conversation.reference_texts import ReferenceTexts

JUDGE_INSTRUCTIONS = """\
You grade customer-service conversations. You get a transcript between a support agent and a
customer, and a numbered list of statements about how the agent should have behaved. Decide
for each statement on its own whether the transcript shows the agent satisfying it.

Answer with one JSON object and nothing else:
{"verdicts": [{"statement": "<the statement, copied>", "met": true or false,
               "reason": "<one or two sentences>"}]}
Give exactly one verdict per statement, in the order given."""


def transcript(messages: list[Message]) -> str:
    lines = []
    for message in messages:
        if isinstance(message, ChatMessage) and message.has_text():
            speaker = "agent" if message.role == "assistant" else "customer"
            lines.append(f"{speaker}: {message.content}")
    return "\n".join(lines)


OWN_LLM_ARGS: dict[str, Any] = {"temperature": 0.0}


@dataclass
class Judge:
    """`model` None means the default judge model (the reference texts' or ours); `llm_args`
    are laid over the default judge arguments (temperature 0)."""

    model: str | None = None
    llm_args: dict[str, Any] = field(default_factory=dict)
    texts: ReferenceTexts | None = None

    def for_texts(self, texts: ReferenceTexts | None) -> Judge:
        """This judge for a data folder (the reference's judge when it has reference texts),
        with its model settled."""
        bound = replace(self, texts=texts)
        bound.model = bound.resolved_model
        return bound

    @property
    def resolved_model(self) -> str:
        if self.model:
            return self.model
        if self.texts is not None:
            return self.texts.section("nl_assertions_judge").get("model") or llm.DEFAULT_LLM
        return llm.DEFAULT_LLM

    def resolved_llm_args(self) -> dict[str, Any]:
        defaults = OWN_LLM_ARGS
        if self.texts is not None:
            defaults = self.texts.section("nl_assertions_judge").get("llm_args") or {}
        return {**defaults, **self.llm_args}

    async def judge(
        self, messages: list[Message], statements: list[str]
    ) -> tuple[list[dict], float]:
        """Per-statement checks in the reference layout, and the judge's cost."""
        try:
            if self.texts is not None:
                reply = await llm.generate(
                    self.resolved_model,
                    reference_prompts.judge_messages(self.texts, messages, statements),
                    **self.resolved_llm_args(),
                )
                return reference_prompts.parse_judge_reply(reply.content), reply.cost or 0.0
            numbered = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(statements))
            prompt = f"Transcript:\n{transcript(messages)}\n\nStatements:\n{numbered}"
            reply = await llm.generate(
                self.resolved_model,
                [
                    {"role": "system", "content": JUDGE_INSTRUCTIONS},
                    {"role": "user", "content": prompt},
                ],
                **self.resolved_llm_args(),
            )
            verdicts = _parse(reply.content or "")
        except ConfigError:
            raise  # the run cannot go on at all (a missing key): not this simulation's failure
        except Exception as exc:  # noqa: BLE001 - a judge that cannot answer is infrastructure
            raise InfrastructureError(
                f"the NL-assertion judge ({self.resolved_model}) failed ({exc}); "
                "set its provider's API key, or pass --judge-llm none to skip NL assertions"
            ) from exc
        checks = []
        for i, statement in enumerate(statements):
            verdict = verdicts[i] if i < len(verdicts) else {}
            checks.append(
                {
                    "nl_assertion": statement,
                    "met": bool(verdict.get("met", False)),
                    "justification": str(verdict.get("reason", "no verdict given")),
                }
            )
        return checks, reply.cost or 0.0


def _parse(text: str) -> list[dict]:
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the judge's reply holds no JSON object")
    data = json.loads(text[start : end + 1])
    verdicts = data.get("verdicts")
    if not isinstance(verdicts, list):
        raise ValueError("the judge's reply has no 'verdicts' list")
    return [v for v in verdicts if isinstance(v, dict)]
