"""BM25 over a knowledge base, scored exactly as the reference scores it.

The reference indexes each document's content as `content.lower().split()` (punctuation stays
on the tokens, titles are not indexed) with rank-bm25's `BM25Okapi` and its defaults, then ranks
every document by score with a stable sort, so equal scores keep knowledge-base order and a query
without a known token still returns the first documents with score 0.

We build the same `BM25Okapi` (its corpus statistics and idf are the definition of the scores),
then precompute, for every (term, document) pair, the term's contribution with the very same
floating-point operations `BM25Okapi.get_scores` performs. A query then adds up only the
contributions of the documents that hold its terms, in query order: the sums are bit for bit
those of `get_scores` (a document without the term adds exactly 0.0 there), at a fraction of the
cost (`get_scores` walks every document in Python for every query term).
"""

from __future__ import annotations

import numpy as np
from rank_bm25 import BM25Okapi

from tau_mcp.servers.knowledge.documents import KnowledgeBase


def tokenize(text: str) -> list[str]:
    return text.lower().split()


class BM25Index:
    """Per-term postings of precomputed BM25 contributions over one knowledge base."""

    def __init__(self, base: KnowledgeBase) -> None:
        self.doc_ids = [doc.id for doc in base.documents]
        self.model = BM25Okapi([tokenize(doc.content) for doc in base.documents])
        self.postings = self._postings(self.model)

    @staticmethod
    def _postings(model: BM25Okapi) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        vocabulary: dict[str, int] = {}
        term_ids: list[int] = []
        doc_index: list[int] = []
        freqs: list[int] = []
        for i, frequencies in enumerate(model.doc_freqs):
            for term, tf in frequencies.items():
                term_ids.append(vocabulary.setdefault(term, len(vocabulary)))
                doc_index.append(i)
                freqs.append(tf)
        idx = np.asarray(doc_index, dtype=np.int64)
        tf = np.asarray(freqs, dtype=np.int64)
        doc_len = np.asarray(model.doc_len)[idx]
        # `get_scores` multiplies `(idf.get(q) or 0)` into the term's vector; same operands,
        # same order, element by element.
        term_idf = [model.idf.get(term) or 0 for term in vocabulary]
        idf = np.asarray(term_idf, dtype=np.float64)[term_ids]
        k1, b, avgdl = model.k1, model.b, model.avgdl
        contrib = idf * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * doc_len / avgdl)))
        # Group by term; the stable sort keeps each term's documents in knowledge-base order.
        order = np.argsort(np.asarray(term_ids, dtype=np.int64), kind="stable")
        bounds = np.searchsorted(np.asarray(term_ids)[order], np.arange(len(vocabulary) + 1))
        return {
            term: (idx[order[bounds[t] : bounds[t + 1]]], contrib[order[bounds[t] : bounds[t + 1]]])
            for term, t in vocabulary.items()
        }

    def scores(self, query: str) -> np.ndarray:
        """Every document's score for `query` (what `BM25Okapi.get_scores` returns)."""
        score = np.zeros(len(self.doc_ids))
        for token in tokenize(query):
            posting = self.postings.get(token)
            if posting is not None:
                docs, contrib = posting
                score[docs] += contrib
        return score

    def search(self, query: str, top_k: int) -> list[tuple[str, float]]:
        """The `top_k` best documents (Python slice semantics, as the reference slices), best
        first, ties in knowledge-base order; none for an empty or blank query."""
        if not query or not query.strip():
            return []
        score = self.scores(query)
        limit = min(top_k, len(self.doc_ids))
        order = np.argsort(-score, kind="stable")[:limit]
        ids = self.doc_ids
        return [(ids[i], float(score[i])) for i in order.tolist()]
