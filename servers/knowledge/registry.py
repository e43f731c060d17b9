"""The kinds of retrieval backend a configuration can name, what each needs, and how to build one.

A retrieval configuration (banking_knowledge's `--retrieval-config`) names backends by kind:
`bm25` and `grep` (offline, here), `embedding` retrievers, the `pointwise_llm_reranker`
postprocessor and the `shell` sandbox (network and shell retrieval, registered by their own
modules). A kind declares its requirements as data (an API key in the environment, a working
sandbox); a configuration is refused, in one sentence, when a kind it needs is not registered in
this build or a requirement is not met. Registering a kind is all it takes to make the
configurations that use it work.

Backends are built once per (kind, parameters, knowledge base) and shared by every episode.
"""

from __future__ import annotations

# The kinds that need a network or a shell register themselves (embedding, reranker, shell).
from tau_mcp.servers.knowledge import kinds as _kinds  # noqa: F401
from tau_mcp.servers.knowledge.backends import (
    BackendKind,
    Requirement,
    Role,
    backend,
    env_var,
    kind,
    missing,
    register,
)
from tau_mcp.servers.knowledge.documents import KnowledgeBase
from tau_mcp.servers.knowledge.pipeline import Results

__all__ = [
    "BackendKind",
    "Requirement",
    "Role",
    "backend",
    "env_var",
    "kind",
    "missing",
    "register",
]


# --- the offline kinds --------------------------------------------------------------------------


# The indexes import numpy (and rank-bm25), ~0.3 s: only when a configuration first needs them.


class BM25Retriever:
    def __init__(self, base: KnowledgeBase, top_k: int) -> None:
        from tau_mcp.servers.knowledge.bm25 import BM25Index

        self.index = base.index("bm25", BM25Index)
        self.top_k = top_k

    def retrieve(self, query: str) -> Results:
        return self.index.search(query, self.top_k)


class GrepRetriever:
    def __init__(self, base: KnowledgeBase, top_k: int, case_sensitive: bool) -> None:
        from tau_mcp.servers.knowledge.grep import GrepIndex

        self.index = base.index("grep", GrepIndex)
        self.top_k = top_k
        self.case_sensitive = case_sensitive

    def retrieve(self, query: str) -> Results:
        return self.index.search(query, self.top_k, self.case_sensitive)


register(
    BackendKind("bm25", "retriever", lambda base, p: BM25Retriever(base, int(p.get("top_k", 10))))
)
register(
    BackendKind(
        "grep",
        "retriever",
        lambda base, p: GrepRetriever(
            base, int(p.get("top_k", 10)), bool(p.get("case_sensitive", False))
        ),
    )
)
