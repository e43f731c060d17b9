"""Inspect tasks with Inspect's own mock model (no key): the eval log holds our reward per
sample; one parameterised task (`tau2`) with an alias per domain, one runner per configuration,
the outside seat's ending rule, and every run option reaching the task. Needs the `inspect`
extra (`pip install -e ".[inspect]"`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.fake_llm_server import text
from tests.support.server import DATA_DIR

pytestmark = pytest.mark.needs_data
inspect_ai = pytest.importorskip(
    "inspect_ai", reason="inspect-ai not installed (the `inspect` extra)"
)


def test_mock_model_as_agent_llm_user_reward_in_log(fake, tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ModelOutput, get_model

    from tau_mcp.harness.integrations.inspect_tasks import tau_mcp_mock

    # The model under evaluation: creates the task in the first sample, only talks in the second.
    agent = get_model(
        "mockllm/model",
        custom_outputs=[
            ModelOutput.for_tool_call(
                "mockllm/model", "create_task", {"user_id": "user_1", "title": "Important Meeting"}
            ),
            ModelOutput.from_content("mockllm/model", "Your task is created."),
            ModelOutput.from_content("mockllm/model", "I cannot help with that."),
        ],
    )
    for index in range(2):  # our LLM user, answered by the fake chat server
        fake.script("inspect-user", text(f"I need help, case {index}."), text("Bye. ###STOP###"))
    task = tau_mcp_mock(
        task_ids="create_task_1,update_task_1",
        user_llm="openai/inspect-user",
        user_llm_args=fake.llm_args(),
        data_dir=str(DATA_DIR),
    )
    logs = inspect_eval(task, model=agent, log_dir=str(tmp_path), max_samples=1, display="none")
    assert logs[0].status == "success", logs[0].error
    log = read_eval_log(logs[0].location)
    scores = {s.id: s.scores["tau_mcp_grade"] for s in log.samples}
    assert {k: v.value for k, v in scores.items()} == {"create_task_1": 1.0, "update_task_1": 0.0}
    assert scores["create_task_1"].answer == "user_stop"
    info = scores["create_task_1"].metadata["reward_info"]
    assert info["db_check"] == {"db_match": True, "db_reward": 1.0}
    assert info["reward_breakdown"] == {"DB": 1.0, "COMMUNICATE": 1.0}
    sample = next(s for s in log.samples if s.id == "create_task_1")
    roles = [m.role for m in sample.messages]
    assert roles == ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert sample.messages[3].tool_calls[0].function == "create_task"
    assert json.loads(sample.messages[4].text)["title"] == "Important Meeting"
    assert log.results.scores[0].metrics["mean"].value == 0.5


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("name", "options"),
    [("tau_mcp/tau2", ["-T", "domain=mock"]), ("tau_mcp/tau_mcp_mock", [])],
)
def test_cli_entry_point_scripted_user(tmp_path: Path, name: str, options: list[str]) -> None:
    """`inspect eval tau_mcp/tau2 -T domain=mock --model mockllm/model` (and the domain's
    alias): what a user types."""
    inspect = Path(sys.executable).with_name("inspect")
    command = [str(inspect)] if inspect.exists() else [sys.executable, "-m", "inspect_ai"]
    run = subprocess.run(
        [
            *command,
            "eval",
            name,
            *options,
            "--model",
            "mockllm/model",
            "-T",
            "task_ids=create_task_1",
            "-T",
            "user=scripted",
            "-T",
            f"data_dir={DATA_DIR}",
            "--log-dir",
            str(tmp_path),
            "--display",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    from inspect_ai.log import list_eval_logs, read_eval_log

    log = read_eval_log(list_eval_logs(str(tmp_path))[0])
    assert log.eval.task == name
    [sample] = log.samples
    score = sample.scores["tau_mcp_grade"]
    assert (score.value, score.answer) == (0.0, "user_stop")  # the mock model only chats
    assert score.metadata["reward_info"]["reward_breakdown"]["DB"] == 0.0


def test_bad_options_fail_with_one_sentence() -> None:
    from tau_mcp.harness.integrations.inspect_tasks import tau_mcp_mock

    with pytest.raises(ValueError, match="unknown task id"):
        tau_mcp_mock(task_ids="nope", data_dir=str(DATA_DIR))
    with pytest.raises(ValueError, match="unknown split"):
        tau_mcp_mock(split="zz", data_dir=str(DATA_DIR))


def test_task_ids_as_inspect_gives_them() -> None:
    from tau_mcp.harness.integrations.inspect_tasks import tau2

    # `-T task_ids=7` arrives as a number, `-T task_ids=a,b` as one text
    for given in ("create_task_1, update_task_1", ["create_task_1", "update_task_1"]):
        task = tau2(domain="mock", task_ids=given, data_dir=str(DATA_DIR))
        assert [s.id for s in task.dataset] == ["create_task_1", "update_task_1"]


def test_one_parameterised_task_and_an_alias_per_registry_domain() -> None:
    from inspect_ai._util.registry import registry_info

    from tau_mcp.harness.integrations import inspect_tasks
    from tau_mcp.servers.domains.registry import domain_names

    assert set(inspect_tasks.DOMAIN_TASKS) == set(domain_names())
    for name in domain_names():
        alias = getattr(inspect_tasks, f"tau_mcp_{name}")
        assert registry_info(alias).name.endswith(f"tau_mcp_{name}")
    alias = inspect_tasks.tau_mcp_mock(task_ids="create_task_1", data_dir=str(DATA_DIR))
    direct = inspect_tasks.tau2(domain="mock", task_ids="create_task_1", data_dir=str(DATA_DIR))
    assert [s.id for s in alias.dataset] == [s.id for s in direct.dataset] == ["create_task_1"]
    assert alias.dataset.name == direct.dataset.name == "tau_mcp_mock_base"


def test_options_are_run_options_checked_in_one_sentence() -> None:
    from tau_mcp.harness.integrations.inspect_tasks import tau2

    with pytest.raises(ValueError, match="unknown run option 'user_model'"):
        tau2(domain="mock", user_model="x", data_dir=str(DATA_DIR))
    with pytest.raises(ValueError, match="does not take num_trials: Inspect runs epochs"):
        tau2(domain="mock", num_trials=2, data_dir=str(DATA_DIR))
    with pytest.raises(ValueError, match="max_steps: input should be greater than or equal"):
        tau2(domain="mock", max_steps=0, data_dir=str(DATA_DIR))
    split = tau2(domain="mock", split="base", data_dir=str(DATA_DIR))
    task_split = tau2(domain="mock", task_split="base", data_dir=str(DATA_DIR))
    assert [s.id for s in split.dataset] == [s.id for s in task_split.dataset]


@pytest.mark.needs_data("telecom")
def test_task_set_name_reaches_the_task() -> None:
    from tau_mcp.harness.integrations.inspect_tasks import tau2
    from tau_mcp.servers.domains.registry import load_domains

    small = load_domains(["telecom"], DATA_DIR, task_set="telecom_small")["telecom"]
    task = tau2(domain="telecom", task_set_name="telecom_small", data_dir=str(DATA_DIR))
    assert [s.id for s in task.dataset] == small.task_ids("base")
    assert len(task.dataset) == 20


def test_the_model_ends_by_the_seat_rule_and_samples_share_one_runner(fake, tmp_path) -> None:
    """The outside seat's one rule (docs/seat.md): the model ends the conversation with the
    stop token in its text or a call of `done` (agent_stop); every sample of the task runs on
    one runner."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import ModelOutput, get_model

    from tau_mcp.harness.integrations import inspect_tasks

    agent = get_model(
        "mockllm/model",
        custom_outputs=[
            ModelOutput.from_content("mockllm/model", "That is all I can do. ###STOP###"),
            ModelOutput.for_tool_call("mockllm/model", "done", {}),
        ],
    )
    for index in range(2):
        fake.script("seat-user", text(f"I need help, case {index}."))
    built = []
    original = inspect_tasks.SimulationRunner

    class Counted(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args, **kwargs):
            built.append(1)
            super().__init__(*args, **kwargs)

    inspect_tasks.SimulationRunner = Counted
    try:
        task = inspect_tasks.tau2(
            domain="mock",
            task_ids="create_task_1,update_task_1",
            user_llm="openai/seat-user",
            user_llm_args=fake.llm_args(),
            data_dir=str(DATA_DIR),
        )
        logs = inspect_eval(task, model=agent, log_dir=str(tmp_path), max_samples=1, display="none")
    finally:
        inspect_tasks.SimulationRunner = original
    assert logs[0].status == "success", logs[0].error
    log = read_eval_log(logs[0].location)
    answers = {s.id: s.scores["tau_mcp_grade"].answer for s in log.samples}
    assert answers == {"create_task_1": "agent_stop", "update_task_1": "agent_stop"}
    ended = next(s for s in log.samples if s.id == "update_task_1")
    assert ended.messages[-1].role == "assistant" and "###STOP###" in ended.messages[-1].text
    assert not ended.messages[-1].tool_calls  # the `done` call is recorded as the stop
    assert built == [1]
