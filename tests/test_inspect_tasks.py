"""Inspect tasks with Inspect's own mock model (no key): the eval log holds our reward per
sample. Needs the `inspect` extra (`pip install -e ".[inspect]"`)."""

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
def test_cli_entry_point_scripted_user(tmp_path: Path) -> None:
    """`inspect eval tau_mcp/tau_mcp_mock --model mockllm/model`: what a user types."""
    inspect = Path(sys.executable).with_name("inspect")
    if not inspect.exists():
        pytest.skip("the inspect command is not installed beside this interpreter")
    run = subprocess.run(
        [
            str(inspect),
            "eval",
            "tau_mcp/tau_mcp_mock",
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
    assert log.eval.task == "tau_mcp/tau_mcp_mock"
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


def test_task_ids_as_inspect_parses_them() -> None:
    from tau_mcp.harness.integrations.inspect_tasks import _ids

    assert _ids(7) == ["7"]  # `-T task_ids=7` arrives as a number
    assert _ids("0, 1,2") == ["0", "1", "2"]
    assert _ids([3, "4"]) == ["3", "4"]
    assert _ids(None) is None
