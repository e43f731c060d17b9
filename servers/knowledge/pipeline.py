"""A search pipeline: a retriever, then postprocessors (rerankers), timed as the reference times
its search tools.

The reference's `KB_search` tools end their output with a wall-clock line: the time of the
retrieval step, of the postprocessing step and their sum (with the input step, which embedding
retrievers use to encode the query). We measure the same steps of our own pipeline.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

Results = list[tuple[str, float]]  # (document id, score), best first


class Retriever(Protocol):
    """Ranks documents for a query; applies its own `top_k`. A retriever that must first turn
    the query into something else (an embedding) may also have `encode(query)` and
    `rank(encoded)`: the pipeline then times the two steps apart, as the reference times its
    input step apart from retrieval."""

    def retrieve(self, query: str) -> Results: ...


class Postprocessor(Protocol):
    """Reorders or filters a retriever's results (a reranker)."""

    def process(self, query: str, results: Results) -> Results: ...


@dataclass(frozen=True, slots=True)
class SearchTiming:
    retrieval_ms: float
    postprocessing_ms: float
    total_ms: float


class SearchPipeline:
    """One retriever and its postprocessors; stateless per call, so episodes share it."""

    def __init__(self, retriever: Retriever, postprocessors: Sequence[Postprocessor] = ()) -> None:
        self.retriever = retriever
        self.postprocessors = tuple(postprocessors)

    def search(self, query: str, k: int | None = None) -> tuple[Results, SearchTiming]:
        """The retriever's results, cut to `k` when given (after the retriever's own top-k,
        as the reference cuts), then postprocessed."""
        encode = getattr(self.retriever, "encode", None)
        input_ms = 0.0
        if encode is not None:
            began = time.perf_counter()
            encoded = encode(query)
            input_ms = (time.perf_counter() - began) * 1000
            started = time.perf_counter()
            results = self.retriever.rank(encoded)  # type: ignore[attr-defined]
        else:
            started = time.perf_counter()
            results = self.retriever.retrieve(query)
        retrieved = time.perf_counter()
        if k is not None:
            results = results[:k]
        post_started = time.perf_counter()
        for step in self.postprocessors:
            results = step.process(query, results)
        finished = time.perf_counter()
        retrieval_ms = (retrieved - started) * 1000
        post_ms = (finished - post_started) * 1000
        return results, SearchTiming(retrieval_ms, post_ms, input_ms + retrieval_ms + post_ms)
