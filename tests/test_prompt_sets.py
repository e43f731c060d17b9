"""Which prompt set a run uses: the reference's (data folder with reference texts) or ours
(the bundled demo data), what the results record, and the default/replaced llm arguments on
the wire."""

from __future__ import annotations

import pytest

from tau_mcp.conversation import reference_prompts as rp
from tau_mcp.conversation.reference_texts import reference_texts
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.data import DEMO_DIR
from tests.support.data import DATA_DIR
from tests.support.fake_llm_server import FakeLLMServer, text
from tests.support.harness import load, mcp_backend

AGENT, USER = "agent-model", "user-model"


@pytest.mark.skipif(not (DEMO_DIR / "tau2").is_dir(), reason=f"demo data missing ({DEMO_DIR})")
async def test_demo_data_runs_on_our_own_prompts_and_defaults(fake: FakeLLMServer, monkeypatch):
    # No llm args given: the defaults (temperature 0) apply; the base URL comes from the env.
    monkeypatch.setenv("OPENAI_API_BASE", fake.api_base)
    monkeypatch.setenv("OPENAI_API_KEY", "fake-key")
    fake.script(USER, text("Please create a task called Demo for user_1."), text("###STOP###"))
    fake.script(AGENT, text("I cannot do that right now."))
    domain = load_domains(["mock"], DEMO_DIR)["mock"]
    config = RunConfig(
        judge_llm="none",
        domain="mock",
        agent_llm=f"openai/{AGENT}",
        user_llm=f"openai/{USER}",
        task_ids=["demo_create"],
        max_retries=0,
    )
    async with mcp_backend(domain) as backend:
        runner = SimulationRunner(backend, domain, config)
        (sim,) = (await Runner(runner).run()).simulations
    assert sim["termination_reason"] == "user_stop", sim["info"]
    assert runner.info().prompt_set == {"name": "tau-mcp"}
    agent_request, user_request = fake.requests[AGENT][0], fake.requests[USER][0]
    assert agent_request["temperature"] == 0.0 and user_request["temperature"] == 0.0
    assert agent_request["seed"] == sim["seed"] == user_request["seed"]
    assert agent_request["messages"][0]["content"].startswith("# How you work")
    assert "# Your scenario" in user_request["messages"][0]["content"]


@pytest.mark.needs_data
async def test_reference_texts_drive_the_gt_agent_and_given_args_replace_defaults(
    fake: FakeLLMServer,
):
    texts = reference_texts(DATA_DIR)
    if texts is None:
        pytest.skip(f"no reference texts under {DATA_DIR}")
    fake.script(USER, text("I need a task for my meeting."), text("###STOP###"))
    fake.script(AGENT, text("Let me look into it."))
    domain = load("mock")
    only_base = {"api_base": fake.api_base, "api_key": "fake-key", "num_retries": 0}
    config = RunConfig(
        judge_llm="none",
        domain="mock",
        agent="gt",
        agent_llm=f"openai/{AGENT}",
        agent_llm_args=only_base,
        user_llm=f"openai/{USER}",
        user_llm_args=only_base,
        task_ids=["create_task_1"],
        max_retries=0,
    )
    async with mcp_backend(domain) as backend:
        runner = SimulationRunner(backend, domain, config)
        (sim,) = (await Runner(runner).run()).simulations
    assert sim["termination_reason"] == "user_stop", sim["info"]
    info = runner.info()
    assert info.prompt_set["name"] == "reference" and info.agent_info.implementation == "gt"
    agent_request = fake.requests[AGENT][0]
    task = domain.task("create_task_1")
    policy = rp.compose_policy(texts, "mock", solo=False)
    assert agent_request["messages"][0]["content"] == rp.gt_system_prompt(
        texts, policy, task.evaluation_criteria.actions
    )
    # The given llm args replaced the defaults: no temperature is sent, the trial seed is.
    assert "temperature" not in agent_request and "temperature" not in fake.requests[USER][0]
    assert agent_request["seed"] == sim["seed"]
