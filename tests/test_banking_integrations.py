"""banking_knowledge's retrieval config on every surface besides HTTP: `tau-harness run` and
`evaluate` (flags, refusal, results header), stdio, Gymnasium, Eval Protocol rows, Inspect and
verifiers (when installed). Runs use the oracle agent and the scripted user: no model, no key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support.data import DATA_DIR

TEXTS = DATA_DIR / "tau2" / "reference_texts" / "banking_knowledge.json"
TOOLS = TEXTS.parent / "tools" / "banking_knowledge.json"
pytestmark = pytest.mark.needs_data("banking_knowledge", "reference_texts")
cli = CliRunner()


def _run(tmp_path: Path, *extra: str):
    out = tmp_path / "results.json"
    args = [
        "run",
        "--domain",
        "banking_knowledge",
        "--agent",
        "oracle",
        "--user",
        "scripted",
        "--task-ids",
        "task_001",
        "--save-to",
        str(out),
        "--data-dir",
        str(DATA_DIR),
        *extra,
    ]
    return cli.invoke(app, args), out


def test_run_refuses_the_default_config_in_one_sentence_and_writes_nothing(tmp_path: Path):
    done, out = _run(tmp_path)
    assert done.exit_code != 0
    message = done.output.strip()
    assert message.count("\n") == 0, message
    assert "'alltools' (the default) cannot run here" in message
    assert "--retrieval-config bm25_grep" in message
    assert not out.exists()
    bad, _ = _run(tmp_path, "--retrieval-config", "bm25", "--retrieval-config-kwargs", "[1]")
    assert bad.exit_code != 0 and "must be a JSON object" in bad.output


def test_run_records_the_config_and_evaluate_rebuilds_with_it(tmp_path: Path):
    done, out = _run(
        tmp_path, "--retrieval-config", "bm25_grep", "--retrieval-config-kwargs", '{"top_k": 3}'
    )
    assert done.exit_code == 0, done.output
    results = json.loads(out.read_text())
    assert results["info"]["retrieval_config"] == "bm25_grep"
    assert results["info"]["retrieval_config_kwargs"] == {"top_k": 3}
    sim = results["simulations"][0]
    assert sim["reward_info"]["reward"] == 1.0
    # A resumed run must use the same config.
    again, _ = _run(tmp_path, "--retrieval-config", "grep_only")
    assert again.exit_code != 0 and "retrieval config" in again.output
    regraded = tmp_path / "regraded.json"
    evaluated = cli.invoke(
        app,
        [
            "evaluate",
            "--domain",
            "banking_knowledge",
            "--input",
            str(out),
            "--save-to",
            str(regraded),
            "--data-dir",
            str(DATA_DIR),
            "--judge-llm",
            "none",
        ],
    )
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads(regraded.read_text())["simulations"][0]["reward_info"]["reward"] == 1.0


def test_golden_retrieval_records_each_simulations_policy(tmp_path: Path):
    done, out = _run(tmp_path, "--retrieval-config", "golden_retrieval")
    assert done.exit_code == 0, done.output
    results = json.loads(out.read_text())
    policy = results["simulations"][0]["policy"]
    want = json.loads(TEXTS.read_text())["golden_retrieval_tasks"]["task_001"]
    import hashlib

    assert hashlib.sha256(policy.encode()).hexdigest() == want["policy_sha256"]
    assert "each simulation" in results["info"]["environment_info"]["policy"]


async def test_stdio_serves_the_configs_tools() -> None:
    from fastmcp import Client

    from tau_mcp.servers.stdio import build_stdio_server

    server = build_stdio_server(
        "banking_knowledge", "agent", "task_001", DATA_DIR, retrieval_config="grep_only"
    )
    async with Client(server) as client:
        names = [t.name for t in await client.list_tools()]
        found = await client.call_tool("grep", {"pattern": "annual fee"}, raise_on_error=False)
    assert names == json.loads(TOOLS.read_text())["agent"]["grep_only"]
    assert found.content[0].text.startswith("1. ")


def test_gymnasium_env_takes_the_config() -> None:
    gym = pytest.importorskip("gymnasium", reason="gymnasium not installed")
    import tau_mcp.harness.integrations.gym  # noqa: F401 - registers the ids

    env = gym.make(
        "tau-mcp/Agent-v0",
        domain="banking_knowledge",
        task_id="task_001",
        user="scripted",
        data_dir=str(DATA_DIR),
        retrieval_config="bm25",
    )
    try:
        _, info = env.reset(seed=7, options={"task_id": "task_001"})
        names = [t["function"]["name"] for t in info["tools"]]
        assert names[0] == "KB_search" and "grep" not in names
        action = json.dumps({"name": "KB_search", "arguments": {"query": "annual fee"}})
        observation, reward, terminated, truncated, _ = env.step(action)
        assert observation.startswith("tool: 1. ") and not (terminated or truncated)
    finally:
        env.close()


def test_eval_protocol_rows_name_the_config_and_carry_its_policy() -> None:
    from tau_mcp.harness.integrations.ep_rows import ep_rows
    from tests.support.harness import load

    domain = load("banking_knowledge")
    rows = ep_rows(domain, task_ids=["task_001"], retrieval_config="golden_retrieval")
    assert rows[0]["environment_context"]["retrieval_config"] == "golden_retrieval"
    required = domain.variants.base.lookup("doc_credit_cards_gold_rewards_card_001")
    assert required.content in rows[0]["messages"][0]["content"]


def test_inspect_task_refuses_a_config_that_cannot_run() -> None:
    pytest.importorskip("inspect_ai", reason="inspect-ai not installed (the inspect extra)")
    from tau_mcp.harness.integrations.inspect_tasks import tau2

    with pytest.raises(ValueError, match="cannot run here"):
        tau2(domain="banking_knowledge", task_ids="task_001", data_dir=str(DATA_DIR))
    task = tau2(
        domain="banking_knowledge",
        task_ids="task_001",
        data_dir=str(DATA_DIR),
        retrieval_config="bm25",
    )
    assert len(task.dataset) == 1


async def test_tau_server_episodes_read_their_tasks_golden_policy() -> None:
    """tau-server's episode endpoints (and stdio) under golden_retrieval: the policy resource
    is the episode's task's policy, as the reference builds it, not a task-less one."""
    import hashlib

    from tau_mcp.servers.stdio import build_stdio_server
    from tests.support.server import serving

    golden = json.loads(TEXTS.read_text())["golden_retrieval_tasks"]
    uri = "tau2://banking_knowledge/policy"
    read = {}
    async with serving(["banking_knowledge"]) as srv, srv.http() as http:
        for task_id in ("task_001", "task_002"):
            body = {"task_id": task_id, "retrieval_config": "golden_retrieval"}
            created = await http.post("/banking_knowledge/episodes", json=body)
            assert created.status_code == 201, created.text
            for mode in ("2026-07-28", "legacy"):
                async with srv.mcp(created.json()["agent_mcp"], mode=mode) as client:
                    text = (await client.read_resource(uri))[0].text
                assert hashlib.sha256(text.encode()).hexdigest() == golden[task_id]["policy_sha256"]
            read[task_id] = text
    assert read["task_001"] != read["task_002"]
    from fastmcp import Client

    server = build_stdio_server(
        "banking_knowledge", "agent", "task_002", DATA_DIR, retrieval_config="golden_retrieval"
    )
    async with Client(server) as client:
        assert (await client.read_resource(uri))[0].text == read["task_002"]
