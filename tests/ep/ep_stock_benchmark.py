"""An Eval Protocol tau2 benchmark written the way EP's own `test_tau_bench_*.py` are
(`evaluation_test` + `MCPGymRolloutProcessor` + a server script), with the one-line swap to
tau-mcp's server script and rows from `tau-harness export ep-rows`.

Runs under EP's own interpreter (`pytest ep_stock_benchmark.py`), driven by
tests/test_ep_stock.py through these variables:
  TAU_EP_ROWS    rows file (JSONL)          TAU_EP_PORT  port EP starts the server on
  TAU_EP_MODEL   the policy's litellm model TAU_EP_API_BASE / TAU_EP_API_KEY  its endpoint
  TAU_EP_OUT     where each graded row is appended (JSONL)
  TAU_EP_SERVER_SCRIPT  tau-mcp's servers/integrations/ep_server.py
The score is the server's grade of the session (`GET /control/reward` -> `grade`).
"""

import json
import os

import httpx
from eval_protocol.mcp_env import gen_session_id
from eval_protocol.models import EvaluateResult, EvaluationRow
from eval_protocol.pytest import evaluation_test
from eval_protocol.pytest.default_mcp_gym_rollout_processor import MCPGymRolloutProcessor
from eval_protocol.types import DatasetRow

PORT = int(os.environ["TAU_EP_PORT"])
MODEL = os.environ["TAU_EP_MODEL"]


def session_id_of(row: EvaluationRow, model_id: str) -> str:
    """The EP session id of a row, derived by EP's own function."""
    info = row.input_metadata.dataset_info or {}
    context = info.get("environment_context", {})
    dataset_row = DatasetRow(
        id=row.input_metadata.row_id,
        seed=context.get("seed"),
        system_prompt="",
        user_prompt_template=info.get("user_prompt_template", ""),
        environment_context=context,
    )
    return gen_session_id(dataset_row, model_id)


def _reason(reason) -> str | None:
    return None if reason is None else getattr(reason, "value", str(reason))


@evaluation_test(
    input_dataset=[os.environ["TAU_EP_ROWS"]],
    completion_params=[
        {
            "model": MODEL,
            "temperature": 0.0,
            "api_base": os.environ["TAU_EP_API_BASE"],
            "api_key": os.environ["TAU_EP_API_KEY"],
            "num_retries": 0,
            "caching": False,  # EP's policy turns litellm's cache on; every row asks afresh
        }
    ],
    rollout_processor=MCPGymRolloutProcessor(),
    rollout_processor_kwargs={"domain": "mock", "port": PORT},
    mode="pointwise",
    num_runs=1,
    max_concurrent_rollouts=1,  # the fake model answers in order
    server_script_path=os.environ["TAU_EP_SERVER_SCRIPT"],  # the one-line swap
)
def test_tau_mcp_mock(row: EvaluationRow) -> EvaluationRow:
    session = session_id_of(row, MODEL)
    answer = httpx.get(
        f"http://localhost:{PORT}/control/reward", headers={"mcp-session-id": session}, timeout=30
    )
    answer.raise_for_status()
    grade = answer.json()["grade"]
    row.evaluation_result = EvaluateResult(
        score=grade["reward"], reason=json.dumps(grade.get("reward_breakdown"))
    )
    status = row.rollout_status
    with open(os.environ["TAU_EP_OUT"], "a") as out:
        record = {
            "row_id": row.input_metadata.row_id,
            "task_id": (row.input_metadata.dataset_info or {})["environment_context"]["task_id"],
            "session_id": session,
            "termination_reason": _reason(status.get_termination_reason() if status else None),
            "rollout_status": status.model_dump(mode="json") if status else None,
            "score": grade["reward"],
            "grade": grade,
            "messages": [m.model_dump(mode="json", exclude_none=True) for m in row.messages],
        }
        out.write(json.dumps(record) + "\n")
    return row
