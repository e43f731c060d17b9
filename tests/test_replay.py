"""Issue 33, item 1: every model call recorded to a cassette and replayed from it.

Fake-model runs of every domain (the llm agent and user; the judge on retail; on
banking_knowledge a dense search and its reranker) are recorded, then replayed with the model
server untouched: the results files are equal (ids, times and durations aside). A changed prompt
fails the replay, naming the field; `--workers 2`, resuming, Ray, `serve`'s user and judge, and
the step-wise (Gymnasium, verifiers) user side replay as well.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import tau_mcp
from tau_mcp.conversation import cassette, reference_texts
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.results import load_results
from tau_mcp.servers.domains import discovery
from tests.support.data import DATA_DIR, DEMO_DIR, missing
from tests.support.fake_llm_server import FakeLLMServer
from tests.support.replay import AGENT, JUDGE, RERANKER, USER, comparable, model_args, script_models

BANKING = {
    "retrieval_config": "openai_embeddings_reranker",
    "retrieval_kwargs": {"reranker_prompt": "Query: {}\nDocument: {}\nRate it 0-10."},
    # The simulation that searches first pays for the documents' embeddings (once per
    # process): one at a time, that is the same simulation in both runs.
    "max_concurrency": 1,
}
JUDGED_RETAIL = ["2", "3"]  # tasks whose reward asks the NL judge


def _statements(domain: str) -> list[str]:
    from tau_mcp.harness.wiring import load_domain

    loaded = load_domain(domain, DATA_DIR)
    return [
        s
        for task in loaded.tasks.values()
        if task.evaluation_criteria is not None
        for s in task.evaluation_criteria.nl_assertions or []
    ]


@pytest.fixture
def models(fake: FakeLLMServer, monkeypatch, tmp_path):
    """The fake server answers every model (the retrieval tools reach it through the
    environment); embeddings start from an empty cache."""
    monkeypatch.setenv("OPENAI_API_KEY", "fake-key")
    monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
    monkeypatch.setenv("TAU_MCP_CACHE_DIR", str(tmp_path / "embedding-cache"))
    script_models(fake, _statements("retail") if missing("retail") is None else [])
    return fake


def _config(fake: FakeLLMServer, domain: str, save_to: Path, **extra) -> RunConfig:
    settings = {
        "domain": domain,
        "data_dir": DATA_DIR,
        "num_tasks": 2,
        "num_trials": 2,
        "max_concurrency": 4,
        "max_retries": 0,
        "agent_llm": f"openai/{AGENT}",
        "agent_llm_args": model_args(fake),
        "user_llm": f"openai/{USER}",
        "user_llm_args": model_args(fake),
        "judge_llm": f"openai/{JUDGE}",
        "judge_llm_args": model_args(fake),
        "save_to": save_to,
        **(BANKING if domain == "banking_knowledge" else {}),
        **({"num_tasks": None, "task_ids": JUDGED_RETAIL} if domain == "retail" else {}),
    }
    return RunConfig(**{**settings, **extra})


def _requests(fake: FakeLLMServer) -> int:
    return sum(len(v) for v in fake.requests.values()) + len(fake.embedding_requests)


def _as_a_new_process(monkeypatch) -> None:
    """Forget the vectors this process keeps: query vectors, and the knowledge bases with
    their document indexes (a replay usually runs in a process of its own)."""
    from tau_mcp.servers.knowledge import documents, embeddings

    monkeypatch.setattr(embeddings.QUERY_MEMO, "_items", type(embeddings.QUERY_MEMO._items)())
    monkeypatch.setattr(documents, "_BASES", {})


@pytest.mark.parametrize("domain", sorted({d.name for d in discovery.installed() if d.builtin}))
def test_a_replayed_run_writes_the_recorded_results(models, domain, tmp_path, monkeypatch):
    if missing(domain):
        pytest.skip(missing(domain))
    fake, tape = models, tmp_path / "tape"
    # Recorded as a fresh process would (vectors an earlier test left in this process, or in
    # the embedding cache, would leave their calls out of the cassette: docs/replay.md).
    monkeypatch.setenv("TAU_MCP_CACHE_DIR", str(tmp_path / "cache"))
    _as_a_new_process(monkeypatch)
    recorded = tau_mcp.run(_config(fake, domain, tmp_path / "recorded.json", record=tape))
    sims = recorded.simulations
    assert len(sims) == 4 and not any(
        s["termination_reason"] == "infrastructure_error" for s in sims
    )
    assert any(m["role"] == "tool" for s in sims for m in s["messages"])  # tools were called
    calls = _requests(fake)

    # Replayed in a fresh cache and memo: every answer, embeddings included, from the tape.
    monkeypatch.setenv("TAU_MCP_CACHE_DIR", str(tmp_path / "another-cache"))
    _as_a_new_process(monkeypatch)
    replayed = tau_mcp.run(_config(fake, domain, tmp_path / "replayed.json", replay=tape))
    assert _requests(fake) == calls  # the model server was not asked anything
    one, two = load_results(tmp_path / "recorded.json"), load_results(tmp_path / "replayed.json")
    assert comparable(one) == comparable(two)
    assert one["info"]["cassette"] == {"format": cassette.FORMAT, "version": 1, "record": str(tape)}
    assert two["info"]["cassette"]["replay"] == str(tape)
    assert replayed.header["info"]["cassette"]["replay_miss"] == "fail"
    lanes = sorted((tape / "lanes").iterdir())
    assert len(lanes) == 4  # one lane per simulation
    if domain == "retail":
        assert any(JUDGE in line for lane in lanes for line in lane.read_text().splitlines())
    if domain == "banking_knowledge":
        assert fake.embedding_requests and any((tape / "shared").iterdir())
        assert fake.requests[RERANKER]  # the reranker rated the hits


@pytest.mark.needs_data("mock", "reference_texts")
def test_a_changed_prompt_fails_the_replay_naming_the_field(models, tmp_path):
    fake, tape, data = models, tmp_path / "tape", tmp_path / "data"
    for part in ("domains/mock", "user_simulator", "reference_texts"):
        shutil.copytree(DATA_DIR / "tau2" / part, data / "tau2" / part)
    settings = {"num_trials": 1, "data_dir": data}
    tau_mcp.run(_config(fake, "mock", tmp_path / "recorded.json", record=tape, **settings))
    policy = data / "tau2" / "domains" / "mock" / "policy.md"
    policy.write_text(policy.read_text() + "\nAlways be brief.\n")
    reference_texts._load.cache_clear()  # texts are read once per process
    calls = _requests(fake)
    results = tau_mcp.run(
        _config(fake, "mock", tmp_path / "replayed.json", replay=tape, **settings)
    )
    assert _requests(fake) == calls
    for sim in results.simulations:
        assert sim["termination_reason"] == "infrastructure_error"
        error = sim["info"]["error"]
        assert (
            error.startswith("ReplayMiss: replay: request ") and "is not in the cassette" in error
        )
        assert "differs at messages[0].content: recorded " in error, error
        assert "Always be brief" in error  # where the texts part
        assert "--replay-miss live" in error
        assert sim["info"]["attempts"] == 1  # a miss is not retried

    # Falling through to the model, the replay finishes.
    live = tau_mcp.run(
        _config(fake, "mock", tmp_path / "live.json", replay=tape, replay_miss="live", **settings)
    )
    assert not any(s["termination_reason"] == "infrastructure_error" for s in live.simulations)
    assert _requests(fake) > calls


@pytest.mark.needs_data("airline")
def test_replay_with_workers_and_resume_gives_the_same_file(models, tmp_path):
    fake, tape = models, tmp_path / "tape"
    tau_mcp.run(_config(fake, "airline", tmp_path / "recorded.json", record=tape, num_tasks=3))
    calls = _requests(fake)
    tau_mcp.run(
        _config(fake, "airline", tmp_path / "workers.json", replay=tape, num_tasks=3, workers=2)
    )
    # Resume: a file holding the first two simulations, finished by a replay.
    recorded = load_results(tmp_path / "recorded.json")
    partial = {**recorded, "simulations": recorded["simulations"][:2]}
    (tmp_path / "resumed.json").write_text(json.dumps(partial))
    resumed = tau_mcp.run(
        _config(fake, "airline", tmp_path / "resumed.json", replay=tape, num_tasks=3)
    )
    assert _requests(fake) == calls
    assert len(resumed.simulations) == 6

    def by_key(path: Path) -> list:
        sims = comparable(load_results(path)["simulations"])
        return sorted(sims, key=lambda s: (s["task_id"], s["trial"]))

    assert by_key(tmp_path / "workers.json") == by_key(tmp_path / "recorded.json")
    assert by_key(tmp_path / "resumed.json") == by_key(tmp_path / "recorded.json")


def test_a_strict_replay_needs_no_key_and_refuses_a_folder_that_is_no_cassette(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="is not a cassette"):
        tau_mcp.run(
            RunConfig(domain="mock", agent="oracle", user="scripted", replay=tmp_path / "empty")
        )
    with pytest.raises(ConfigError, match="--replay-miss goes with --replay"):
        RunConfig(domain="mock", replay_miss="live")
    with pytest.raises(ConfigError, match="fail or live"):
        RunConfig(domain="mock", replay=tmp_path, replay_miss="sometimes")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("x")
    with pytest.raises(ConfigError, match="not empty and holds no cassette"):
        tau_mcp.run(
            RunConfig(domain="mock", agent="oracle", user="scripted", record=tmp_path / "full")
        )


def test_demo_oracle_run_records_an_empty_cassette_and_replays(tmp_path):
    """No model is called: lanes are written (empty), and the replay is the same run."""
    settings = {"domain": "mock", "data_dir": DEMO_DIR, "agent": "oracle", "user": "scripted"}
    tau_mcp.run(RunConfig(**settings, record=tmp_path / "t", save_to=tmp_path / "a.json"))
    tau_mcp.run(RunConfig(**settings, replay=tmp_path / "t", save_to=tmp_path / "b.json"))
    assert comparable(load_results(tmp_path / "a.json")) == comparable(
        load_results(tmp_path / "b.json")
    )


# --- the other ways in: serve (user and judge), Gymnasium and verifiers (user), Ray --------


@pytest.mark.needs_data("retail")
async def test_serve_replays_its_user_and_judge(models, tmp_path):
    from tests.test_harness_serve import _create, agent_client, served

    fake = models
    settings = {
        "user": "llm",
        "user_llm": f"openai/{USER}",
        "user_llm_args": model_args(fake),
        "judge_llm": f"openai/{JUDGE}",
        "judge_llm_args": model_args(fake),
    }

    async def play(**cassette_option) -> dict:
        async with served("retail", **settings, **cassette_option) as (base, http, *_):
            created = await _create(http, JUDGED_RETAIL[0])
            async with agent_client("mcp-sdk", base + created["mcp"]) as (call, *_):
                for line in ("Hello, how can I help?", "Let me see.", "Anything else?"):
                    reply, _ = await call("send_message_to_user", {"message": line})
                    if "ended the conversation" in reply:
                        break
            return (await http.get(f"/simulations/{created['simulation_id']}")).json()

    recorded = await play(record=tmp_path / "tape")
    assert recorded["termination_reason"] == "user_stop"
    assert recorded["reward_info"]["nl_assertions"]  # the judge answered
    calls = _requests(fake)
    replayed = await play(replay=tmp_path / "tape")
    assert _requests(fake) == calls
    assert comparable(replayed) == comparable(recorded)


@pytest.mark.needs_data("airline")
def test_a_gymnasium_agent_env_replays_its_user(models, tmp_path):
    gym = pytest.importorskip("gymnasium", reason="the gym extra is not installed")
    from tau_mcp.harness.integrations.gym import register_envs

    register_envs()
    fake = models
    settings = {
        "domain": "airline",
        "task_id": "0",
        "data_dir": str(DATA_DIR),
        "user_llm": f"openai/{USER}",
        "user_llm_args": model_args(fake),
    }

    def episode(**cassette_option) -> list:
        env = gym.make("tau-mcp/Agent-v0", **settings, **cassette_option)
        try:
            seen = [env.reset(seed=3)[0]]
            for line in ("How can I help?", "Let me look.", "Done."):
                observation, reward, terminated, truncated, _ = env.step(line)
                seen.append((observation, reward, terminated))
                if terminated or truncated:
                    break
            return seen
        finally:
            env.close()

    recorded = episode(record=str(tmp_path / "tape"))
    assert recorded[-1][2]  # the user hung up
    calls = _requests(fake)
    assert episode(replay=str(tmp_path / "tape")) == recorded
    assert _requests(fake) == calls
