"""The pointwise LLM reranker against a fake chat server: the reference's request bodies
(embedding_requests.json), its parsing and filtering rules, and its cost."""

from __future__ import annotations

import json

import pytest

from tau_mcp.servers.engine import call_context
from tau_mcp.servers.knowledge.rerank import PointwiseReranker, parse_rating
from tests.support.fake_llm_server import FakeLLMServer, text
from tests.support.knowledge import (
    banking_documents,
    embedding_requests,
    needs_documents,
    needs_retrieval_fixtures,
)


def _template_from(recorded_content: str, query: str, passage: str) -> str:
    """The prompt template, read off one recorded request (test data, never our code)."""
    at_query = recorded_content.index(query)
    at_passage = recorded_content.rindex(passage)
    return (
        recorded_content[:at_query]
        + "{}"
        + recorded_content[at_query + len(query) : at_passage]
        + "{}"
        + recorded_content[at_passage + len(passage) :]
    )


def _by_content():
    return {d.content: d for d in banking_documents()}


@needs_documents
@needs_retrieval_fixtures
@pytest.mark.parametrize("config", ["bm25_reranker", "openai_embeddings_reranker"])
def test_request_bodies_match_the_reference(config):
    recorded = embedding_requests()["configs"][config]["per_query"]
    by_content = _by_content()
    contents = {d.id: d.content for d in banking_documents()}
    template = None
    with FakeLLMServer() as fake:
        fake.respond("gpt-5.2", lambda body: text('{"relevance_score": 6}'))
        for step in recorded:
            query = step["query"]
            chats = [r["body"] for r in step["requests"] if r["path"] == "/v1/chat/completions"]
            assert len(chats) == 10
            ids = []
            for body in chats:
                content = body["messages"][0]["content"]
                passage = next(c for c in by_content if content.endswith(c + "\n<end_document>"))
                ids.append(by_content[passage].id)
                template = template or _template_from(content, query, passage)
            reranker = PointwiseReranker(
                template, contents.get, min_score=5, llm_args=fake.llm_args()
            )
            before = len(fake.requests["gpt-5.2"])
            kept = reranker.process(query, [(i, 1.0) for i in ids])
            sent = fake.requests["gpt-5.2"][before:]
            assert sorted(json.dumps(b, sort_keys=True) for b in sent) == sorted(
                json.dumps(b, sort_keys=True) for b in chats
            )
            assert kept == [(i, 6.0) for i in ids]


@needs_documents
def test_ratings_filter_and_order_results():
    docs = banking_documents()[:12]
    contents = {d.id: d.content for d in docs}
    contents[docs[11].id] = ""  # a document without content is never rated
    replies = {
        0: text('{"relevance_score": 3}'),
        1: text('{"relevance_score": 9}'),
        2: text('{"relevance_score": "7"}'),
        3: text('{"relevance_score": 15}'),
        4: text("not json"),
        5: {"content": None, "refusal": "I cannot help with that."},
        6: text('{"relevance_score": 7.0}'),
        7: text('{"relevance_score": 7.5}'),
        8: {"content": '{"relevance_score": 10}', "finish_reason": "length"},
        9: text('{"relevance_score": 9}'),
        10: {"status": 500, "headers": {}},
    }

    def responder(body):
        content = body["messages"][0]["content"]
        index = next(i for i, d in enumerate(docs) if content.endswith(d.content + "|"))
        return replies[index]

    with FakeLLMServer() as fake:
        fake.respond("judge", responder)
        reranker = PointwiseReranker(
            "q={} d={}|",
            contents.get,
            model="openai/judge",
            min_score=5,
            llm_args={**fake.llm_args(), "num_retries": 0},
        )
        sink = call_context.Charges()
        with call_context.charging(sink):
            kept = reranker.process("fee", [(d.id, 0.5) for d in docs])
        assert kept == [
            (docs[3].id, 10.0),  # 15 clamped to 10
            (docs[1].id, 9.0),
            (docs[9].id, 9.0),  # ties keep retrieval order
            (docs[2].id, 7.0),  # "7" parses as 7
            (docs[6].id, 7.0),  # 7.0 parses as 7
        ]
        assert len(fake.requests["judge"]) == 11
        assert "reasoning_effort" not in fake.requests["judge"][0]  # not a gpt-5 model
        assert sink.calls == 10  # every answered request is charged (the failed one is not)
        # min_score 0 keeps the refusal (rated 0) and the low rating.
        low = PointwiseReranker(
            "q={} d={}|",
            contents.get,
            model="openai/judge",
            min_score=0,
            llm_args={**fake.llm_args(), "num_retries": 0},
        )
        kept = dict(low.process("fee", [(d.id, 0.5) for d in docs]))
        assert kept[docs[5].id] == 0.0 and kept[docs[0].id] == 3.0
        assert docs[4].id not in kept and docs[7].id not in kept and docs[8].id not in kept
        before = len(fake.requests["judge"])
        assert low.process("fee", [(docs[11].id, 1.0)]) == []
        assert low.process("fee", []) == []
        assert len(fake.requests["judge"]) == before


def test_parse_rating_rules():
    assert parse_rating('{"relevance_score": 4}', None, "stop") == 4
    assert parse_rating('{"relevance_score": -2}', None, "stop") == 0
    assert parse_rating(None, None, "stop") == 0
    assert parse_rating('{"x": 1}', None, "stop") is None
    assert parse_rating('{"relevance_score": 4}', None, "content_filter") is None
