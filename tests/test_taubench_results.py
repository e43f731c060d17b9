"""The original τ-bench's results files: read into our layout (`convert-results --to tau-mcp`,
and by every reader directly), re-graded by `evaluate` to the rewards the original recorded,
and written back in its layout as it wrote them.

Every results file of `conformance/taubench/requests/` is used: tool-calling, few-shot and act
agents (act's actions read out of its text replies), runs the original cut short with a crash,
several tasks, both domains.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_mcp.grading import Grader
from tau_mcp.harness.evaluate import regrade
from tau_mcp.harness.results import load_results
from tau_mcp.harness.results.convert import convert
from tau_mcp.harness.results.folder import LayoutError
from tau_mcp.harness.results.layouts import detect, read, single_file_text
from tests.support import taubench as tb
from tests.support.harness import mcp_backend

pytestmark = pytest.mark.needs_data("taubench")

RUNS = tb.FIXTURES / "requests"


def _runs() -> list[Path]:
    return sorted(p for p in RUNS.iterdir() if (p / "results.json").is_file())


def _domain_of(run: Path):
    return tb.domains()[
        "tau-bench-airline" if run.name.startswith("airline") else "tau-bench-retail"
    ]


@pytest.mark.parametrize("run", _runs(), ids=lambda p: p.name)
async def test_evaluate_regrades_the_original_results_to_the_recorded_rewards(
    run: Path, tmp_path: Path
) -> None:
    recorded = json.loads((run / "results.json").read_text())
    assert detect(run / "results.json") == "tau-bench"
    done = convert(run / "results.json", "tau-mcp", tmp_path / "ours.json")
    assert done is not None and done.simulations == len(recorded)
    document = load_results(tmp_path / "ours.json")
    domain = _domain_of(run)
    async with mcp_backend(domain) as backend:
        graded = await regrade(backend, domain, Grader(backend, domain, None), document)
    for original, sim in zip(recorded, graded["simulations"], strict=True):
        assert sim["task_id"] == f"test_{original['task_id']}"
        assert sim["reward_info"]["reward"] == original["reward"], sim["id"]
        if "reward_info" in original["info"]:
            assert sim["reward_info"]["original_reward_info"] == original["info"]["reward_info"]
        else:  # the original's solve crashed: recorded as an error, scored 0
            assert sim["termination_reason"] == "agent_error"
    # written back in the original's layout: the results as recorded, written as run.py
    # writes them (json.dump, indent 2; the kit's copies were saved with UTF-8 text and a
    # final newline instead)
    text = single_file_text(graded, "tau-bench")
    assert text == json.dumps(recorded, indent=2)


def test_every_reader_takes_the_original_file_and_its_actions_come_out_of_act_replies() -> None:
    path = RUNS / "retail_act_llm_t0_model-gpt-4o" / "results.json"
    document = load_results(path)  # as view, report and evaluate read it
    (sim,) = document["simulations"]
    assert sim["termination_reason"] == "user_stop"
    call = sim["messages"][1]["tool_calls"][0]
    assert (call["name"], call["arguments"]) == (
        "get_user_details",
        {"user_id": "yusuf_rossi_9620"},
    )
    assert sim["messages"][2]["role"] == "tool" and not sim["messages"][2]["content"].startswith(
        "API output"
    )
    assert sim["messages"][3] == {
        "role": "assistant",
        "content": "Thank you, your request is complete.",
        "raw_data": {"text": sim["messages"][3]["raw_data"]["text"]},
    }
    assert read(path, "dev")["simulations"][0]["task_id"] == "dev_0"


def test_a_tau2_run_is_refused_in_the_original_layout_in_one_sentence(tmp_path: Path) -> None:
    document = {
        "info": {"environment_info": {"domain_name": "mock"}},
        "tasks": [],
        "simulations": [{"id": "s", "task_id": "create_task_1", "trial": 0, "messages": []}],
    }
    with pytest.raises(LayoutError, match="only results of a τ-bench domain"):
        single_file_text(document, "tau-bench")
