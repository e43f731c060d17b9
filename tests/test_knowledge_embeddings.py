"""Dense retrieval through litellm against a fake OpenAI-compatible server: the request bodies
the reference sends (embedding_requests.json), the disk cache, and cosine ranking."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from tau_mcp.servers.engine import call_context
from tau_mcp.servers.knowledge.embeddings import (
    BLANK_QUERY,
    DenseIndex,
    DenseRetriever,
    EmbeddingCache,
    EmbeddingError,
    QueryMemo,
    reference_embedder,
)
from tests.support.fake_llm_server import FakeLLMServer, fake_embedding
from tests.support.knowledge import (
    banking_documents,
    embedding_requests,
    needs_documents,
    needs_retrieval_fixtures,
    recorded_query_prefix,
)

ROOT = Path(__file__).resolve().parents[1]


def _index(embedder, cache_dir: Path, docs=None) -> DenseIndex:
    docs = docs or banking_documents()
    return DenseIndex(
        [d.id for d in docs], [d.content for d in docs], embedder, EmbeddingCache(cache_dir)
    )


CONFIGS = {
    "openai_embeddings": ("openai", "text-embedding-3-large"),
    "qwen_embeddings": ("openrouter", "qwen3-embedding-8b"),
}


@needs_documents
@needs_retrieval_fixtures
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_request_bodies_match_the_reference(config, tmp_path):
    recorded = embedding_requests()["configs"][config]
    embedder_type, model = CONFIGS[config]
    prefix = recorded_query_prefix(config) if embedder_type == "openrouter" else ""
    docs = banking_documents()
    with FakeLLMServer() as fake:
        embedder = reference_embedder(
            embedder_type, model, query_prefix=prefix, api_base=fake.api_base, api_key="fake-key"
        )
        memo = QueryMemo()  # the process's memo, fresh for this test
        retriever = DenseRetriever(_index(embedder, tmp_path), 10, memo)
        retriever.index.build()
        # The index: one request with every document's content, in knowledge-base order.
        assert len(fake.embedding_requests) == len(recorded["index_build"]) == 1
        body, want = fake.embedding_requests[0], recorded["index_build"][0]["body"]
        assert {k: v for k, v in body.items() if k != "input"} == {
            k: v for k, v in want.items() if k != "input"
        }
        assert len(body["input"]) == want["input"]["count"] == len(docs)
        assert want["input"]["document_ids"] == [d.id for d in docs]
        sha = [hashlib.sha256(t.encode()).hexdigest() for t in body["input"]]
        assert sha == want["input"]["sha256_each"]
        # Each query: one request, none for a repeated query.
        for step in recorded["per_query"]:
            before = len(fake.embedding_requests)
            retriever.retrieve(step["query"])
            sent = fake.embedding_requests[before:]
            assert sent == [r["body"] for r in step["requests"]]
        # A second environment in the same process asks for nothing new.
        before = len(fake.embedding_requests)
        again = DenseRetriever(_index(embedder, tmp_path), 10, memo)
        again.retrieve(recorded["per_query"][0]["query"])
        assert len(fake.embedding_requests) - before == len(
            recorded["second_environment_same_process"]
        )


@needs_documents
def test_cache_is_shared_keyed_by_content_model_and_endpoint(tmp_path):
    docs = banking_documents()[:40]
    with FakeLLMServer() as fake:
        openai = reference_embedder(
            "openai", "text-embedding-3-large", api_base=fake.api_base, api_key="k"
        )
        first = _index(openai, tmp_path, docs)
        first.build()
        assert len(fake.embedding_requests) == 1
        # Another index (another episode, worker or run) reads the cache: no document request.
        second = _index(openai, tmp_path, docs)
        np.testing.assert_array_equal(second.build(), first.build())
        assert len(fake.embedding_requests) == 1
        # One document changed: only it is asked for.
        changed = list(docs)
        changed[3] = type(docs[3])(docs[3].id, docs[3].title, docs[3].content + " (revised)")
        _index(openai, tmp_path, changed).build()
        assert fake.embedding_requests[-1]["input"] == [changed[3].content]
        # Another model or another endpoint: its own vectors.
        small = reference_embedder(
            "openai", "text-embedding-3-small", api_base=fake.api_base, api_key="k"
        )
        _index(small, tmp_path, docs).build()
        assert len(fake.embedding_requests[-1]["input"]) == len(docs)
        elsewhere = reference_embedder(
            "openai", "text-embedding-3-large", api_base=fake.api_base + "/", api_key="k"
        )
        _index(elsewhere, tmp_path, docs).build()
        assert len(fake.embedding_requests[-1]["input"]) == len(docs)
        assert len(fake.embedding_requests) == 4
    assert not list(tmp_path.rglob(".tmp-*"))  # no half-written files


@needs_documents
def test_concurrent_cold_starts_send_one_request(tmp_path):
    docs = banking_documents()[:60]
    with FakeLLMServer() as fake:
        fake.delay = 0.3
        embedder = reference_embedder(
            "openai", "text-embedding-3-large", api_base=fake.api_base, api_key="k"
        )
        indexes = [_index(embedder, tmp_path, docs) for _ in range(4)]
        threads = [threading.Thread(target=i.build) for i in indexes]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(fake.embedding_requests) == 1
        for index in indexes[1:]:
            np.testing.assert_array_equal(index.build(), indexes[0].build())


@pytest.mark.e2e
@needs_documents
def test_worker_processes_share_the_cache(tmp_path):
    script = (
        "import sys\n"
        "from tau_mcp.servers.knowledge.embeddings import reference_embedder\n"
        "from tests.support.knowledge import banking_documents\n"
        "from tests.test_knowledge_embeddings import _index\n"
        "from pathlib import Path\n"
        "e = reference_embedder('openai', 'text-embedding-3-large', api_base=sys.argv[1], api_key='k')\n"
        "_index(e, Path(sys.argv[2]), banking_documents()[:50]).build()\n"
    )
    with FakeLLMServer() as fake:
        fake.delay = 0.5
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", script, fake.api_base, str(tmp_path)], cwd=ROOT, env=env
            )
            for _ in range(2)
        ]
        assert [p.wait(timeout=120) for p in procs] == [0, 0]
        assert len(fake.embedding_requests) == 1


@needs_documents
def test_cosine_ranking_blank_queries_and_costs(tmp_path):
    docs = banking_documents()
    with FakeLLMServer() as fake:
        embedder = reference_embedder(
            "openai", "text-embedding-3-large", api_base=fake.api_base, api_key="k"
        )
        retriever = DenseRetriever(_index(embedder, tmp_path), 10, QueryMemo())
        sink = call_context.Charges()
        with call_context.charging(sink):
            results = retriever.retrieve("Gold Rewards Card annual fee")
        # The index build and the query, priced by litellm's list.
        assert sink.calls == 2 and sink.total > 0
        matrix = np.array([fake_embedding(d.content) for d in docs], dtype=np.float32)
        matrix = matrix.astype(np.float64)
        query = np.array(fake_embedding("Gold Rewards Card annual fee"), dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        scores = (matrix / np.where(norms == 0, 1, norms)) @ (query / np.linalg.norm(query))
        order = np.argsort(scores)[::-1][:10]
        assert results == [(docs[i].id, float(scores[i])) for i in order]
        assert len(DenseRetriever(retriever.index, 3).retrieve("gold card")) == 3
        for blank in ("", "   ", "\n"):
            with pytest.raises(ValueError, match="cannot generate embedding from blank text"):
                retriever.retrieve(blank)
        assert str(ValueError(BLANK_QUERY)).startswith("Empty or missing input for key 'query'")
        # A query with no known word embeds to zeros: every score is 0.
        assert {score for _, score in retriever.retrieve("§§§")} == {0.0}


@needs_documents
def test_failed_requests_are_one_sentence_and_cache_nothing(tmp_path):
    docs = banking_documents()[:5]
    with FakeLLMServer() as fake:
        fake.embedding_failures = 10
        embedder = reference_embedder(
            "openai", "text-embedding-3-large", api_base=fake.api_base, api_key="k"
        )
        with pytest.raises(
            EmbeddingError, match="the embedding request to text-embedding-3-large failed"
        ) as err:
            _index(embedder, tmp_path, docs).build()
        assert "\n" not in str(err.value)
        assert not list(tmp_path.rglob("*.npy"))
        fake.embedding_failures = 0
        _index(embedder, tmp_path, docs).build()
        assert len(list(tmp_path.rglob("*.npy"))) == len(docs)


def test_reference_embedders_reach_their_providers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_BASE", "http://proxy.invalid/v1")
    monkeypatch.delenv("OPENROUTER_API_BASE", raising=False)
    openai = reference_embedder("openai", "text-embedding-3-large", query_prefix="ignored")
    assert (openai.model, openai.encoding_format, openai.query_prefix) == (
        "text-embedding-3-large",
        "base64",
        "",
    )
    assert openai.api_base == "http://proxy.invalid/v1"
    qwen = reference_embedder("openrouter", "qwen3-embedding-8b", query_prefix="P:")
    assert (qwen.model, qwen.encoding_format, qwen.query_prefix, qwen.api_base) == (
        "openrouter/qwen/qwen3-embedding-8b",
        "float",
        "P:",
        None,
    )
    gemini = reference_embedder("openrouter", "gemini-embedding-001", query_prefix="P:")
    assert (gemini.model, gemini.query_prefix) == ("openrouter/google/gemini-embedding-001", "")
    assert json.dumps(openai.identity())  # the cache key is plain data
    with pytest.raises(ValueError, match="unknown embedder type"):
        reference_embedder("cohere", "x")
