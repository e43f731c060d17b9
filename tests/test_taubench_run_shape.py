"""The original τ-bench's run shape in tau-mcp: its run.py options as RunConfig fields, its
task selection, the order and draws of its seeded run, its pass^k, and the rules of its
conversations (the user opens, 30 agent actions, no tool-error limit, a strategy that cannot
read its model's reply ends the conversation with an error and reward 0)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_mcp.conversation.errors import ParticipantFailed
from tau_mcp.conversation.messages import ChatMessage, ToolCall
from tau_mcp.harness.agents import Agent
from tau_mcp.harness.benchmarks import with_benchmark_defaults
from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig, select_tasks
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.metrics import original_metrics
from tau_mcp.harness.run_plan import plan_run, sample_draw
from tau_mcp.harness.runner import Runner
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.simulator.taubench import parse_react
from tests.support import taubench as tb
from tests.support.harness import mcp_backend

# --- options ---------------------------------------------------------------------------------


def test_run_py_options_are_run_config_fields() -> None:
    config = RunConfig(
        env="retail",
        agent_strategy="act",
        user_strategy="react",
        model="gpt-4o",
        model_provider="openai",
        user_model="claude-3-5-sonnet-20241022",
        user_model_provider="anthropic",
        temperature=0.5,
        end_index=-1,
    )
    assert (config.domain, config.agent, config.user) == ("tau-bench-retail", "act", "react")
    assert config.agent_llm == "openai/gpt-4o"
    assert config.user_llm == "anthropic/claude-3-5-sonnet-20241022"
    assert config.agent_llm_args == {"temperature": 0.5}
    assert config.end_index is None
    assert RunConfig(domain="x", temperature=0.0, agent_llm_args={"top_p": 1}).agent_llm_args == {
        "top_p": 1,
        "temperature": 0.0,
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"env": "retail", "domain": "airline"}, "env and domain disagree"),
        ({"env": "shop"}, "env is one of airline, retail"),
        ({"domain": "mock", "model_provider": "openai"}, "model_provider goes with model"),
    ],
)
def test_bad_original_options_are_one_sentence(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RunConfig(**options)


def test_the_cli_refuses_two_names_for_the_agent_in_one_sentence() -> None:
    result = CliRunner().invoke(
        app, ["run", "--env", "retail", "--agent", "oracle", "--agent-strategy", "act"]
    )
    assert result.exit_code == 1
    assert "--agent oracle and --agent-strategy act disagree" in result.output


# --- tasks -----------------------------------------------------------------------------------


@pytest.mark.needs_data("taubench")
def test_tasks_are_selected_as_the_original_selects_them() -> None:
    retail = tb.domains()["tau-bench-retail"]

    def ids(**options: Any) -> list[str]:
        return [t.id for t in select_tasks(retail, RunConfig(domain=retail.name, **options))]

    assert len(ids()) == 115  # the default split: test
    assert ids(task_ids=[2, 4, 6]) == ["test_2", "test_4", "test_6"]
    assert ids(task_split="train", task_ids="2 4") == ["train_2", "train_4"]
    assert ids(start_index=3, end_index=6) == ["test_3", "test_4", "test_5"]
    assert ids(task_split="dev", start_index=18) == ["dev_18", "dev_19"]
    with pytest.raises(ConfigError, match="unknown task id"):
        ids(task_ids=[115])


# --- the seeded run --------------------------------------------------------------------------


def _the_originals_run(
    seed: int,
    split: int,
    task_ids: list[int] | None,
    start: int,
    end: int,
    trials: int,
    shuffle: bool,
    displays: int | None,
) -> tuple[list[tuple[int, int]], list[list[int]]]:
    """What run.py does with Python's global generator, written out: seed it, build one
    environment without a task (a task index drawn), then per trial its task list, shuffled,
    and per task (few-shot) five examples drawn."""
    random.seed(seed)
    random.randint(0, split)
    order, draws = [], []
    for trial in range(trials):
        idxs = task_ids if task_ids else list(range(start, end))
        if shuffle:
            random.shuffle(idxs)
        for idx in idxs:
            order.append((idx, trial))
            if displays is not None:
                draws.append(random.sample(list(range(displays)), 5))
    return order, draws


@pytest.mark.parametrize(
    ("task_ids", "shuffle", "displays"),
    [(None, False, None), (None, True, 69), ([3, 5, 7, 9], True, None), ([3, 5, 7], True, 19)],
)
def test_the_run_order_and_draws_are_the_originals(task_ids, shuffle, displays) -> None:
    seed, split, trials = 10, 115, 3
    given = list(task_ids) if task_ids else None
    want_order, want_draws = _the_originals_run(seed, split, given, 2, 8, trials, shuffle, displays)
    names = [f"test_{i}" for i in (task_ids or range(2, 8))]
    draw = sample_draw(displays, 5) if displays is not None else None
    plan = plan_run(seed, trials, names, shuffle, draw, split, named=bool(task_ids))
    assert plan.order == [(f"test_{i}", t) for i, t in want_order]
    if displays is not None:
        assert [plan.draws[key] for key in plan.order] == want_draws


def test_pass_hat_k_is_the_originals() -> None:
    rewards = {"a": [1, 1, 0, 1], "b": [0, 0, 0, 0], "c": [1, 1, 1, 1]}
    sims = [
        {"task_id": task, "trial": trial, "reward_info": {"reward": float(r)}}
        for task, values in rewards.items()
        for trial, r in enumerate(values)
    ]
    sims.append({"task_id": "a", "trial": 9, "termination_reason": "infrastructure_error"})
    average, pass_hat = original_metrics(sims)
    assert average == pytest.approx(7 / 12)
    for k in range(1, 5):
        want = (math.comb(3, k) + math.comb(4, k)) / math.comb(4, k) / 3
        assert pass_hat[k] == pytest.approx(want)


# --- conversations ---------------------------------------------------------------------------


class Calculator(Agent):
    """Calls a tool that fails on every turn (no expression), forever."""

    def __init__(self, context) -> None:
        super().__init__(context)
        self.seen: list[Any] = []

    async def respond(self, incoming):
        self.seen.append(incoming)
        return ChatMessage(
            role="assistant", tool_calls=[ToolCall(id=f"c{len(self.seen)}", name="calculate")]
        )


class Unreadable(Agent):
    async def respond(self, incoming):
        raise ParticipantFailed("the action has no name and arguments")


async def _one(agent: type[Agent]) -> dict[str, Any]:
    domain = tb.domains()["tau-bench-retail"]
    config = RunConfig(
        domain=domain.name, agent="oracle", user="scripted", task_ids=["test_0"], max_retries=0
    )
    async with mcp_backend(domain) as backend:
        runner = SimulationRunner(backend, domain, config, agent_factory=agent)
        results = await Runner(runner).run()
    return results.simulations[0]


@pytest.mark.needs_data("taubench")
def test_the_originals_model_defaults_go_only_to_sides_that_call_a_model() -> None:
    domain = tb.domains()["tau-bench-airline"]
    models = with_benchmark_defaults(RunConfig(domain=domain.name, agent="llm"), domain)
    assert models.agent == "tool-calling" and models.agent_llm == "gpt-4o"
    assert models.agent_llm_args == {"temperature": 0.0} and models.user_llm == "gpt-4o"
    assert models.seed == 10 and models.max_errors is None
    oracle = RunConfig(domain=domain.name, agent="oracle", user="scripted")
    oracle = with_benchmark_defaults(oracle, domain)
    assert oracle.agent_llm is None and oracle.user_llm is None  # an oracle run names no model
    assert oracle.seed == 10 and oracle.max_errors is None


@pytest.mark.needs_data("taubench")
async def test_the_user_opens_and_the_agent_has_thirty_actions_without_an_error_limit() -> None:
    sim = await _one(Calculator)
    messages = sim["messages"]
    assert messages[0]["role"] == "user"  # no greeting from the agent
    assert sum(m["role"] == "assistant" for m in messages) == 30
    assert sum(m["role"] == "tool" for m in messages) == 30
    assert messages[-1]["role"] == "tool" and messages[-1]["content"].startswith("Error: ")
    assert sim["termination_reason"] == "max_steps"  # 30 failed calls, still no error limit
    assert sim["reward_info"]["reward"] == 0.0
    assert sim["reward_info"]["original_reward_info"] is None  # the original computed none


@pytest.mark.needs_data("taubench")
async def test_a_reply_the_strategy_cannot_read_ends_with_an_error_scored_zero() -> None:
    sim = await _one(Unreadable)
    assert sim["termination_reason"] == "agent_error"
    assert sim["reward_info"]["reward"] == 0.0
    assert sim["info"]["error"] == "agent: the action has no name and arguments"


def test_the_react_user_reply_is_parsed_as_the_original_parses_it() -> None:
    assert parse_react("Thought:\nhm\n\nUser Response:\nhello") == "hm\n\nUser Response:\nhello"
    assert parse_react("User Response:\n bye ") == "bye"
    assert parse_react("Thought: done ###STOP###") == "###STOP###"
    for reply in ("Thought: a Thought: b", "just text"):
        with pytest.raises(ParticipantFailed):
            parse_react(reply)
