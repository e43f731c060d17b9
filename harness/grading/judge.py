"""The LLM judge for natural-language assertions about a conversation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from conversation import llm
from conversation.messages import ChatMessage, Message
from harness.backends import InfrastructureError

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


@dataclass
class Judge:
    model: str = llm.DEFAULT_LLM
    llm_args: dict[str, Any] = field(default_factory=lambda: {"temperature": 0.0})

    async def judge(
        self, messages: list[Message], statements: list[str]
    ) -> tuple[list[dict], float]:
        """Per-statement checks in the reference layout, and the judge's cost."""
        numbered = "\n".join(f"{i + 1}. {s}" for i, s in enumerate(statements))
        prompt = f"Transcript:\n{transcript(messages)}\n\nStatements:\n{numbered}"
        try:
            reply = await llm.generate(
                self.model,
                [
                    {"role": "system", "content": JUDGE_INSTRUCTIONS},
                    {"role": "user", "content": prompt},
                ],
                **self.llm_args,
            )
            verdicts = _parse(reply.content or "")
        except Exception as exc:  # noqa: BLE001 - a judge that cannot answer is infrastructure
            raise InfrastructureError(
                f"the NL-assertion judge ({self.model}) failed ({exc}); "
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
