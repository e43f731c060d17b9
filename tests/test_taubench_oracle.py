"""The oracle agent with the scripted user on every task of every τ-bench split, through the
server's MCP endpoints and the harness's orchestrator and grader: each scores what its gold
scores in the original (1.0 for every task), a gold plan that transfers to a human ends right
after the transfer, and the end state's hash is the original's gold data hash."""

from __future__ import annotations

import pytest

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.domains.tau_bench.reward import original_reward_info
from tests.support import taubench as tb
from tests.support.harness import mcp_backend

pytestmark = pytest.mark.needs_data("taubench")


@pytest.mark.parametrize("fixture", tb.GOLD_FILES)
async def test_oracle_scores_what_gold_scores(fixture: str) -> None:
    recorded = tb.gold(fixture)
    domain = tb.domains()[tb.DOMAIN_OF[recorded["domain"]]]
    config = RunConfig(
        domain=domain.name,
        agent="oracle",
        user="scripted",
        judge_llm="none",
        task_split=recorded["split"],
        max_concurrency=8,
        max_retries=0,
    )
    async with mcp_backend(domain) as backend:
        results = await Runner(SimulationRunner(backend, domain, config)).run()
    by_id = {sim["task_id"]: sim for sim in results.simulations}
    assert len(by_id) == len(recorded["tasks"])
    problems = []
    for record in recorded["tasks"]:
        task_id = f"{recorded['split']}_{record['task_index']}"
        sim = by_id[task_id]
        final = record["final"]
        info = sim["reward_info"]
        if sim["termination_reason"] != "agent_stop" or info is None:
            problems.append(f"{task_id}: ended {sim['termination_reason']}")
            continue
        got = original_reward_info(domain.task(task_id), info)
        if got != final["reward_info"]:
            problems.append(f"{task_id}: {got} != {final['reward_info']}")
        last = sim["messages"][-1]
        transferred = final["ended_by"] == "transfer_to_human_agents"
        if transferred != (last["role"] == "tool" and last["content"] == "Transfer successful"):
            problems.append(f"{task_id}: the last message is {last}")
    assert not problems, "\n".join(problems[:10])
