"""banking_knowledge's network and shell configurations end to end, with no network: a fake
OpenAI-compatible server answers the embeddings, the reranker and both sides' chat models.

An `alltools` run goes through the real server over MCP: the agent calls dense search, BM25
search and the shell; the results, the embedding requests and the run's costs (the embeddings
count with the agent's) are checked. A reranker configuration runs on an episode directly.
"""

from __future__ import annotations

import asyncio

import pytest

from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.episode import EpisodeStore
from tau_mcp.servers.knowledge.sandbox import sandbox_problem
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.harness import load, mcp_backend
from tests.support.knowledge import (
    banking_documents,
    data_with_model_texts,
    recorded_query_prefix,
    recorded_reranker_prompt,
)

AGENT, USER = "agent-model", "user-model"
TASK = "task_001"

pytestmark = pytest.mark.needs_data("banking_knowledge", "reference_texts")


@pytest.fixture
def network(fake: FakeLLMServer, monkeypatch, tmp_path):
    """Every provider pointed at the fake server, and an empty embedding cache."""
    monkeypatch.setenv("OPENAI_API_KEY", "fake-key")
    monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
    monkeypatch.setenv("TAU_MCP_CACHE_DIR", str(tmp_path / "cache"))
    return fake


@pytest.mark.e2e
@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no shell sandbox: {sandbox_problem()}")
async def test_an_alltools_run_searches_embeds_and_runs_the_shell(network: FakeLLMServer):
    fake = network
    fake.script(
        USER,
        text("Hi, what is the annual fee of the Gold Rewards Card?"),
        text("Thanks, that is all. ###STOP###"),
    )
    fake.script(
        AGENT,
        call("KB_search_dense", query="Gold Rewards Card annual fee", k=3),
        call("KB_search_bm25", query="gold rewards card annual fee"),
        call("shell", command="grep -l 'Gold Rewards' *.md | head -3"),
        text("The Gold Rewards Card has no annual fee."),
    )
    domain = load("banking_knowledge")
    config = fake.run_config("banking_knowledge", TASK, AGENT, USER, retrieval_config="alltools")
    async with mcp_backend(domain) as backend:
        results = await Runner(SimulationRunner(backend, domain, config)).run()
    (sim,) = results.simulations
    assert sim["termination_reason"] == "user_stop", sim.get("info")

    listed = {t["function"]["name"] for t in fake.requests[AGENT][0]["tools"]}
    assert {"KB_search_bm25", "KB_search_dense", "shell"} <= listed
    tools = [m for m in sim["messages"] if m["role"] == "tool"]
    dense, bm25, shell = (m["content"] for m in tools)
    assert not any(m["error"] for m in tools)
    assert dense.startswith("1. ") and "\n3. " in dense and "\n4. " not in dense
    assert dense.rstrip().endswith("ms]") and "[Timing: retrieval=" in dense
    assert "\n10. " in bm25
    assert shell == (
        "INDEX.md\ndoc_bank_accounts_bank_accounts__general__045.md\n"
        "doc_business_credit_cards_business_gold_rewards_card_001.md\n"
    )

    # The documents in one request (all of them, knowledge-base order), then the query.
    requests = fake.embedding_requests
    assert [len(r["input"]) for r in requests] == [len(banking_documents()), 1]
    assert requests[0]["input"] == [d.content for d in banking_documents()]
    assert requests[1] == {
        "model": "text-embedding-3-large",
        "input": ["Gold Rewards Card annual fee"],
        "encoding_format": "base64",
    }
    # Their price counts with the agent's costs.
    tool_cost = sim["info"]["tool_cost"]["assistant"]
    assert tool_cost > 0
    llm_costs = sum(
        m["cost"] for m in sim["messages"] if m["role"] == "assistant" and m.get("cost")
    )
    assert sim["agent_cost"] == pytest.approx(llm_costs + tool_cost)


def test_a_reranker_config_rates_each_hit_and_charges_the_call(network: FakeLLMServer):
    fake = network
    ratings = {}

    def judge(body):
        content = body["messages"][0]["content"]
        score = 9 if "Gold Rewards" in content else 2
        ratings[content] = score
        return text(f'{{"relevance_score": {score}}}')

    fake.respond("gpt-5.2", judge)
    domain = load("banking_knowledge")
    variant = domain.resolve_variant(
        "bm25_reranker", {"reranker_prompt": "Query: {}\nDocument: {}\nRate 0-10."}
    )
    episode = EpisodeStore({"banking_knowledge": domain}).create(
        "banking_knowledge", TASK, variant=variant
    )
    assert episode.blocks("agent", "KB_search")  # servers run it off their event loop
    outcome = episode.call("agent", "KB_search", {"query": "gold rewards card annual fee"})
    assert not outcome.error, outcome.text
    assert len(fake.requests["gpt-5.2"]) == 10  # one rating per hit
    kept = [line for line in outcome.text.splitlines() if line.startswith("   Score: ")]
    assert kept and set(kept) == {"   Score: 9.0000"}
    assert "reranking=" in outcome.text
    assert outcome.cost > 0 and episode.tool_cost == outcome.cost
    first = fake.requests["gpt-5.2"][0]
    assert first["reasoning_effort"] == "low" and first["stream"] is False
    assert first["response_format"]["json_schema"]["name"] == "RelevanceScore"


@pytest.mark.needs_data("banking_knowledge", "reference_texts", "conformance")
def test_model_texts_in_the_data_folder_reach_the_models(
    network: FakeLLMServer, tmp_path, monkeypatch
):
    """With the texts `tau-harness data fetch` writes (retrieval_model_texts; here the
    reference's, read off its recorded requests) the reranker and Qwen configs run with no
    kwargs: the reranker's prompt and model and Qwen's query instruction are the data's."""
    fake = network
    prompt, prefix = recorded_reranker_prompt(), recorded_query_prefix("qwen_embeddings")
    texts = {
        "reranker_prompt": prompt,
        "reranker_model": "openai/rater",
        "qwen_query_prefix": prefix,
    }
    domain = load("banking_knowledge", data_with_model_texts(tmp_path / "data", texts))
    fake.respond("rater", lambda body: text('{"relevance_score": 8}'))
    store = EpisodeStore({"banking_knowledge": domain})

    reranked = store.create(
        "banking_knowledge", TASK, variant=domain.resolve_variant("bm25_reranker")
    )
    query = "replacement card shipping fee"
    outcome = reranked.call("agent", "KB_search", {"query": query})
    assert not outcome.error, outcome.text
    rated = fake.requests["rater"]
    contents = {d.content for d in banking_documents()}
    assert len(rated) == 10
    for body in rated:
        (message,) = body["messages"]
        assert any(message["content"] == prompt.format(query, c) for c in contents)

    monkeypatch.setenv("OPENROUTER_API_KEY", "fake-key")
    monkeypatch.setenv("OPENROUTER_API_BASE", fake.api_base)
    dense = store.create(
        "banking_knowledge", TASK, variant=domain.resolve_variant("qwen_embeddings")
    )
    question = "how long does a wire transfer take (qwen, data texts)"
    outcome = dense.call("agent", "KB_search", {"query": question})
    assert not outcome.error, outcome.text
    assert fake.embedding_requests[-1]["input"] == [prefix + question]


def test_without_the_texts_the_network_configs_say_where_they_come_from(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("OPENROUTER_API_KEY", "k")
    domain = load("banking_knowledge", data_with_model_texts(tmp_path / "data", None))
    from tau_mcp.servers.engine.variants import VariantError

    for config in ("bm25_reranker", "qwen_embeddings", "alltools-qwen"):
        with pytest.raises(VariantError) as refused:
            domain.resolve_variant(config)
        message = str(refused.value)
        assert "\n" not in message and "retrieval_model_texts" in message, message
        assert "use an offline config such as --retrieval-config bm25_grep" in message


def test_network_configs_name_what_they_lack(monkeypatch):
    for key in ("OPENAI_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    domain = load("banking_knowledge")
    from tau_mcp.servers.engine.variants import VariantError

    with pytest.raises(VariantError, match=r"needs OPENAI_API_KEY \(embeddings\)"):
        domain.resolve_variant("openai_embeddings", None)
    with pytest.raises(VariantError, match="query instruction for qwen3-embedding-8b") as qwen:
        domain.resolve_variant("qwen_embeddings", None)
    assert "OPENROUTER_API_KEY (embeddings)" in str(qwen.value)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(VariantError, match="the reranker's prompt, which the data folder does"):
        domain.resolve_variant("bm25_reranker", None)
    with pytest.raises(VariantError, match="two {} fields"):
        domain.resolve_variant("bm25_reranker", {"reranker_prompt": "no fields"})
    monkeypatch.setenv("OPENROUTER_API_KEY", "k")
    qwen = domain.resolve_variant("qwen_embeddings", {"query_prefix": "Q: "})
    assert qwen.config.searches["KB_search"].query_prefix == "Q: "


@pytest.mark.e2e
@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no shell sandbox: {sandbox_problem()}")
async def test_a_slow_shell_command_does_not_hold_up_other_episodes():
    """The shell runs off the server's event loop: a quick call on another episode, made while
    a command sleeps, is answered first (the in-process server shares this test's loop, so a
    blocked loop would answer in the other order)."""
    from tests.support.server import serving

    episodes = "/banking_knowledge/episodes"
    async with serving(["banking_knowledge"]) as srv, srv.http() as http:
        slow = await http.post(episodes, json={"task_id": TASK, "retrieval_config": "terminal_use"})
        quick = await http.post(episodes, json={"task_id": TASK, "retrieval_config": "bm25"})
        assert slow.status_code == quick.status_code == 201, (slow.text, quick.text)
        order: list[str] = []
        async with srv.mcp(slow.json()["agent_mcp"]) as a, srv.mcp(quick.json()["agent_mcp"]) as b:

            async def sleeper() -> None:
                result = await a.call_tool("shell", {"command": "sleep 3; echo woke"})
                assert result.content[0].text == "woke\n"
                order.append("shell")

            async def searcher() -> None:
                await asyncio.sleep(0.5)
                result = await b.call_tool("KB_search", {"query": "annual fee"})
                assert result.content[0].text.startswith("1. ")
                order.append("search")

            await asyncio.gather(sleeper(), searcher())
        assert order == ["search", "shell"]


def test_tool_result_costs_are_read_from_meta():
    from tau_mcp.conversation.tools import COST_META, result_cost

    assert result_cost({COST_META: 0.25, "other": 1}) == 0.25
    for meta in (None, {}, {COST_META: "1"}, {COST_META: True}, {COST_META: -1}, [COST_META]):
        assert result_cost(meta) == 0.0
