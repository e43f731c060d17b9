"""Shared by the knowledge-base retrieval tests: the banking documents and the recorded cases."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import pytest

from tests.conformance import CONFORMANCE_DIR, DATA_DIR

DOCUMENTS_DIR = DATA_DIR / "tau2" / "domains" / "banking_knowledge" / "documents"
RETRIEVAL_DIR = CONFORMANCE_DIR / "retrieval"

needs_documents = pytest.mark.skipif(
    not DOCUMENTS_DIR.is_dir(),
    reason=f"banking_knowledge documents not found in {DOCUMENTS_DIR} (set TAU2_DATA_DIR)",
)
needs_retrieval_fixtures = pytest.mark.skipif(
    not (RETRIEVAL_DIR / "reference.json").is_file(),
    reason=f"retrieval fixtures not found in {RETRIEVAL_DIR}",
)


@dataclass(frozen=True)
class Doc:
    id: str
    title: str
    content: str


@cache
def banking_documents() -> tuple[Doc, ...]:
    """The 698 documents in sorted file-name order (the order every fixture was recorded in)."""
    files = sorted(DOCUMENTS_DIR.glob("*.json"), key=lambda p: p.name)
    docs = []
    for path in files:
        raw = json.loads(path.read_text(encoding="utf-8"))
        docs.append(Doc(raw["id"], raw["title"], raw["content"]))
    return tuple(docs)


@cache
def retrieval_cases(tool: str) -> tuple[tuple[dict, dict], ...]:
    """(query, recorded answer) pairs of one tool."""
    queries = json.loads((RETRIEVAL_DIR / "queries.json").read_text())
    reference = json.loads((RETRIEVAL_DIR / "reference.json").read_text())
    return tuple((q, reference[q["id"]]) for q in queries if q["tool"] == tool)


@cache
def embedding_requests() -> dict:
    return json.loads((RETRIEVAL_DIR / "embedding_requests.json").read_text())
