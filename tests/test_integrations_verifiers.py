"""The verifiers environment under verifiers' own evaluation entry point (`vf-eval`), with the
policy model and the simulated user both answered by the fake OpenAI-compatible server.

verifiers is heavy (datasets, pyarrow, ...), so CI installs it in a virtualenv of its own (see
.ci/run) and names that interpreter in $TAU_VF_PYTHON; this interpreter is used when it can
import verifiers itself. Otherwise the test skips and says why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.data import DATA_DIR
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.harness import domain_available

pytestmark = [pytest.mark.needs_data, pytest.mark.e2e]
MODULE = "tau_mcp.harness.integrations.verifiers_env"


def _vf_eval() -> Path:
    explicit = os.environ.get("TAU_VF_PYTHON")
    if explicit:
        python = Path(explicit)
    else:
        try:
            import verifiers  # noqa: F401
        except ImportError:
            pytest.skip(
                "verifiers not available: set TAU_VF_PYTHON to a Python with "
                "`pip install -e '.[verifiers]'` (CI builds one; verifiers is too heavy for "
                "the main environment)"
            )
        python = Path(sys.executable)
    script = python.parent / "vf-eval"
    if not script.is_file():
        pytest.skip(f"no vf-eval next to {python}")
    return script


def _run(script: Path, fake: FakeLLMServer, env_args: dict, tmp: Path, *extra: str) -> list[dict]:
    args = {
        "user_llm": "openai/user",
        "user_llm_args": fake.llm_args(),
        "data_dir": str(DATA_DIR),
        **env_args,
    }
    environment = {
        **os.environ,
        "FAKE_API_KEY": "fake-key",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }
    command = [
        str(script), MODULE, "--env-args", json.dumps(args), "--model", "policy",
        "--api-base-url", fake.api_base, "--api-key-var", "FAKE_API_KEY",
        "--num-examples", str(len(env_args["task_ids"])), "--rollouts-per-example", "1",
        "--max-concurrent", "1", "--save-results", "--output-dir", str(tmp),
        "--state-columns", "tau", "--disable-tui", *extra,
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, cwd=tmp, timeout=400
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    [results] = list(tmp.glob("evals/*/*/results.jsonl"))
    return [json.loads(line) for line in results.read_text().splitlines() if line.strip()]


def test_vf_eval_on_mock_tasks(tmp_path: Path):
    """Two rollouts through vf-eval's default env-server mode: one does the gold call (1.0),
    one talks but never updates the task (0.0)."""
    script = _vf_eval()
    with FakeLLMServer() as fake:
        fake.script(
            "user",
            text("Please create a task called 'Important Meeting' for user_1."),
            text("Perfect, thanks. ###STOP###"),
            text("Please mark task_1 of user_1 as completed."),
            text("Okay, bye. ###STOP###"),
        )
        fake.script(
            "policy",
            call("create_task", user_id="user_1", title="Important Meeting"),
            text("Your task 'Important Meeting' is created."),
            text("I am sorry, I cannot help with that today."),
        )
        rows = _run(
            script,
            fake,
            {"domain": "mock", "task_ids": ["create_task_1", "update_task_1"]},
            tmp_path,
        )
    by_task = {row["info"]["task_id"]: row for row in rows}
    gold, skipped = by_task["create_task_1"], by_task["update_task_1"]
    assert gold["reward"] == 1.0 and gold["tau"]["reward_info"]["db_check"]["db_match"]
    assert gold["tau"]["termination_reason"] == "user_stop"
    assert skipped["reward"] == 0.0 and not skipped["tau"]["reward_info"]["db_check"]["db_match"]
    # The model saw the greeting and the user's opening line, then its tool's result.
    assert [m["role"] for m in gold["prompt"]] == ["system", "assistant", "user"]
    assert [m["role"] for m in gold["completion"]] == ["assistant", "tool", "assistant", "user"]
    assert '"task_id": "task_2"' in gold["completion"][1]["content"]


def test_vf_eval_on_an_airline_task(tmp_path: Path):
    reason = domain_available("airline")
    if reason:
        pytest.skip(reason)
    script = _vf_eval()
    with FakeLLMServer() as fake:
        fake.script(
            "user",
            text("Hi, I am Amelia and I want to cancel reservation Z7GOZK."),
            text("Thank you. ###STOP###"),
        )
        fake.script(
            "policy",
            call("cancel_reservation", reservation_id="Z7GOZK"),
            text("Your reservation Z7GOZK is cancelled."),
        )
        rows = _run(
            script, fake, {"domain": "airline", "task_ids": ["19"]}, tmp_path,
            "--disable-env-server",
        )  # fmt: skip
    [row] = rows
    assert row["reward"] == 1.0, row["tau"]
    assert row["tau"]["reward_info"]["reward_basis"] == ["DB", "COMMUNICATE"]
    assert row["tau"]["termination_reason"] == "user_stop"


def test_vf_eval_rollout_under_faults(tmp_path: Path):
    """`faults` among the environment's arguments (docs/faults.md): the policy's tool call
    meets the injected fault as the tool's error, its retry goes through, the reward is the end
    state's, and the rollout's `tau` state lists the fault."""
    script = _vf_eval()
    with FakeLLMServer() as fake:
        fake.script(
            "user",
            text("Please create a task called 'Important Meeting' for user_1."),
            text("Perfect, thanks. ###STOP###"),
        )
        good = call("create_task", user_id="user_1", title="Important Meeting")
        fake.script("policy", good, good, text("Your task 'Important Meeting' is created."))
        env_args = {"domain": "mock", "task_ids": ["create_task_1"], "faults": "transient=1"}
        [row] = _run(script, fake, env_args, tmp_path)
    assert row["reward"] == 1.0, row["tau"]
    tools = [m["content"] for m in row["completion"] if m["role"] == "tool"]
    assert "Service temporarily unavailable (HTTP 503)" in tools[0]
    assert '"task_id": "task_2"' in tools[1]
    assert [(f["tool"], f["kind"]) for f in row["tau"]["faults"]] == [("create_task", "transient")]


def test_vf_eval_policy_ends_by_the_seat_rule(tmp_path: Path):
    """The outside seat's one rule (docs/seat.md): a policy that calls `done` ends the rollout
    with the agent stop, the call recorded as the stop message."""
    script = _vf_eval()
    with FakeLLMServer() as fake:
        fake.script("user", text("Please create a task called 'Important Meeting' for user_1."))
        fake.script("policy", call("done"))
        [row] = _run(script, fake, {"domain": "mock", "task_ids": ["create_task_1"]}, tmp_path)
    assert row["tau"]["termination_reason"] == "agent_stop"
    assert row["reward"] == 0.0
    last = row["tau"]["reward_info"]
    assert last is not None and not last["db_check"]["db_match"]


def test_task_set_name_reaches_the_environment():
    """`task_set_name` (the run option `--task-set-name`) selects the environment's rows."""
    reason = domain_available("telecom")
    if reason:
        pytest.skip(reason)
    python = _vf_eval().with_name("python")
    probe = (
        "import json, sys\n"
        "from tau_mcp.harness.integrations.verifiers_env import load_environment\n"
        "env = load_environment(domain='telecom', task_set_name='telecom_small',"
        " user='scripted', data_dir=sys.argv[1])\n"
        "print(json.dumps([row['info']['task_id'] for row in env.dataset]))\n"
    )
    done = subprocess.run(
        [str(python), "-c", probe, str(DATA_DIR)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    from tau_mcp.servers.domains.registry import load_domains

    small = load_domains(["telecom"], DATA_DIR, task_set="telecom_small")["telecom"]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == small.task_ids("base")
