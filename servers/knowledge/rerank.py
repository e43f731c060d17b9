"""The pointwise LLM reranker: a chat model rates each retrieved document 0-10 for the query.

As the reference's `pointwise_llm_reranker` does, and we keep:

- one request per document with non-empty content, all of a search at once (up to
  `max_concurrency` in flight): a single user message, the prompt template filled by
  `str.format(query, content)`; a structured-output `response_format` (a strict JSON schema named
  `RelevanceScore` with one integer `relevance_score`, generated from our model below);
  `reasoning_effort` for `gpt-5` models; `"stream": false`, as the OpenAI SDK's `parse` sends;
- the reply parsed as that model (pydantic, lax: `"7"` and `7.0` are 7); a refusal or an empty
  reply rates 0; a reply that fails to parse, a request that fails, or a reply cut by length or
  the content filter drops the document; ratings are clamped to 0-10;
- documents rated at least `min_score` are kept, best first (ties in retrieval order), with the
  rating as their score.

The prompt text is the reference's, read from the data folder by the caller (never from code).
Calls go through `conversation.llm.complete_request` (litellm: any chat model it serves; recorded and
replayed with the simulation's cassette); their cost is charged to the tool call's cost sink
(`servers/knowledge/model_calls.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from tau_mcp.servers.knowledge import model_calls

log = logging.getLogger(__name__)
DEFAULT_MODEL = "gpt-5.2"  # when neither the data (retrieval_model_texts) nor the kwargs name one
DEFAULT_MAX_CONCURRENCY = 20
Results = list[tuple[str, float]]


class RelevanceScore(BaseModel):
    relevance_score: int


def response_format() -> dict[str, Any]:
    """The structured-output request for `RelevanceScore`, as the OpenAI SDK builds it from a
    pydantic model (strict: no other properties)."""
    schema = RelevanceScore.model_json_schema()
    schema["additionalProperties"] = False
    return {
        "type": "json_schema",
        "json_schema": {"schema": schema, "name": RelevanceScore.__name__, "strict": True},
    }


def parse_rating(content: str | None, refusal: str | None, finish_reason: str | None) -> int | None:
    """A reply's rating (0-10), or None when the document is to be dropped."""
    if finish_reason in ("length", "content_filter"):
        return None
    if refusal or content is None:
        return 0
    try:
        parsed = RelevanceScore.model_validate_json(content)
    except ValidationError:
        return None
    return max(0, min(10, parsed.relevance_score))


@dataclass(frozen=True)
class PointwiseReranker:
    """Rates each result with a chat model and keeps those rated `min_score` or more."""

    prompt: str  # a template with two `{}`: the query, then the document's content
    contents: Callable[[str], str | None] = field(compare=False)  # document id -> content
    model: str = DEFAULT_MODEL
    min_score: int = 7
    reasoning_effort: str | None = "low"
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    llm_args: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def request(self, query: str, passage: str) -> dict[str, Any]:
        """The keyword arguments of one rating request (litellm's `acompletion`)."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": self.prompt.format(query, passage)}],
            "response_format": response_format(),
            "extra_body": {"stream": False},
            "num_retries": 2,
        }
        if self.reasoning_effort and self.model.rsplit("/", 1)[-1].startswith("gpt-5"):
            kwargs["reasoning_effort"] = self.reasoning_effort
        kwargs.update(self.llm_args)
        return kwargs

    async def _rate(self, semaphore: asyncio.Semaphore, query: str, passage: str) -> int | None:
        from tau_mcp.conversation import llm
        from tau_mcp.conversation.cassette import ReplayMiss

        async with semaphore:
            try:
                data, cost = await llm.complete_request(self.request(query, passage))
            except ReplayMiss:
                raise  # a replay that lacks the call fails the simulation, not the document
            except Exception as exc:  # noqa: BLE001 - the reference drops the document
                log.warning("reranker request failed (%s); document dropped", type(exc).__name__)
                return None
        model_calls.charge(cost)
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            return None
        return parse_rating(
            message.get("content"), message.get("refusal"), choice.get("finish_reason")
        )

    async def _rate_all(self, query: str, passages: list[str]) -> list[int | None]:
        semaphore = asyncio.Semaphore(max(1, self.max_concurrency))
        return list(await asyncio.gather(*(self._rate(semaphore, query, p) for p in passages)))

    def process(self, query: str, results: Results) -> Results:
        if not results:
            return results
        rated = [(doc_id, self.contents(doc_id) or "") for doc_id, _ in results]
        rated = [(doc_id, passage) for doc_id, passage in rated if passage]
        if not rated:
            return []
        ratings = model_calls.run(lambda: self._rate_all(query, [p for _, p in rated]))
        kept = [
            (doc_id, float(rating))
            for (doc_id, _), rating in zip(rated, ratings, strict=True)
            if rating is not None and rating >= self.min_score
        ]
        kept.sort(key=lambda item: item[1], reverse=True)
        return kept
