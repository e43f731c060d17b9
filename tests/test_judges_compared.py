"""Issue 33, item 3: a saved run re-judged by another judge, through cassettes, and the two
judges' agreement in `report` (Cohen's kappa over NL assertions, rewards changed)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import tau_mcp
from tau_mcp.harness.cli import app
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.report.stats import cohen_kappa
from tests.support.data import DATA_DIR
from tests.support.replay import (
    AGENT,
    JUDGE,
    OTHER_JUDGE,
    USER,
    judge_for,
    model_args,
    script_models,
)

# Retail tasks judged on NL assertions whose gold actions write nothing: doing nothing passes
# the DB check, so the judge alone decides the reward.
TASKS = ["24", "62", "67"]
STATEMENTS = [
    "Agent should tell the user the materials of the two t-shirts are polyester and cotton.",
    "Agent should tell the user the Bluetooth speaker costs $302.67.",
    "Agent should tell the user the battery life is 20 hours.",
    "Agent should tell the user the order total is $829.43.",
]
pytestmark = pytest.mark.needs_data("retail")


def test_cohen_kappa():
    assert cohen_kappa([]) is None
    assert cohen_kappa([(True, True), (False, False)]) == 1.0
    assert cohen_kappa([(True, True)] * 3) == 1.0  # perfect agreement, one category
    assert cohen_kappa([(True, False), (False, True)]) == -1.0
    # p_o = 0.5; both say yes 3 times in 4: p_e = 0.625
    pairs = [(True, True), (True, True), (False, True), (True, False)]
    assert cohen_kappa(pairs) == pytest.approx((0.5 - 0.625) / 0.375)


def _invoke(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result


def _only_nl_differs(one: dict, two: dict) -> None:
    skip = {"nl_assertions", "reward", "reward_breakdown", "info"}
    assert {k: v for k, v in one.items() if k not in skip} == {
        k: v for k, v in two.items() if k not in skip
    }
    assert one["info"]["env"] == two["info"]["env"]


def test_a_second_judge_through_cassettes_and_the_agreement_in_the_report(fake, tmp_path):
    script_models(fake)
    fake.respond(JUDGE, judge_for(STATEMENTS, dislike="battery"))
    fake.respond(OTHER_JUDGE, judge_for(STATEMENTS, dislike="order total"))
    args = model_args(fake)
    run_file, tape = tmp_path / "run.json", tmp_path / "run-tape"
    tau_mcp.run(
        RunConfig(
            domain="retail",
            data_dir=DATA_DIR,
            task_ids=TASKS,
            num_trials=2,
            agent_llm=f"openai/{AGENT}",
            agent_llm_args=args,
            user_llm=f"openai/{USER}",
            user_llm_args=args,
            judge_llm=f"openai/{JUDGE}",
            judge_llm_args=args,
            save_to=run_file,
            record=tape,
        )
    )

    def evaluate(out, judge, *cassette):
        return _invoke(
            "evaluate", "--input", run_file, "--save-to", out, "--data-dir", DATA_DIR,
            "--judge-llm", f"openai/{judge}", "--judge-llm-args", json.dumps(args), *cassette,
        )  # fmt: skip

    # The other judge, recorded; then replayed: the same file, no model asked.
    evaluate(tmp_path / "other.json", OTHER_JUDGE, "--record", tmp_path / "other-tape")
    asked = len(fake.requests[OTHER_JUDGE])
    assert asked == 6  # one request per simulation
    evaluate(tmp_path / "other-again.json", OTHER_JUDGE, "--replay", tmp_path / "other-tape")
    assert len(fake.requests[OTHER_JUDGE]) == asked
    # The run's own judge, answered from the run's cassette (its lanes hold the judge's calls).
    judged = len(fake.requests[JUDGE])
    evaluate(tmp_path / "same.json", JUDGE, "--replay", tape)
    assert len(fake.requests[JUDGE]) == judged

    run, other, same = (
        json.loads((tmp_path / name).read_text())
        for name in ("run.json", "other.json", "same.json")
    )
    assert other["info"]["judge_llm"] == f"openai/{OTHER_JUDGE}"
    assert other["info"]["cassette"]["record"] == str(tmp_path / "other-tape")
    again = json.loads((tmp_path / "other-again.json").read_text())
    assert again["simulations"] == other["simulations"]
    assert same["simulations"] == run["simulations"]
    by_id = {s["id"]: s for s in other["simulations"]}
    for sim in run["simulations"]:
        _only_nl_differs(sim["reward_info"], by_id[sim["id"]]["reward_info"])

    report = json.loads(
        _invoke("report", run_file, tmp_path / "other.json", "--format", "json").stdout
    )
    judges = report["comparisons"][0]["judges"]
    # Per trial: materials and price met by both; battery only by the other; total only by
    # the run's judge. Task 62 passes with the other judge, 67 fails: 2 rewards per trial.
    assert judges["assertions"] == 8 and judges["agree"] == 4
    assert judges["verdicts"] == {"both_met": 4, "only_a_met": 2, "only_b_met": 2, "neither_met": 0}
    assert judges["kappa"] == pytest.approx((0.5 - 0.625) / 0.375)
    assert judges["rewards_changed"] == 4 and judges["outcomes_flipped"] == 4
    itself = json.loads(
        _invoke("report", run_file, tmp_path / "same.json", "--format", "json").stdout
    )
    assert itself["comparisons"][0]["judges"]["kappa"] == 1.0
    assert itself["comparisons"][0]["judges"]["rewards_changed"] == 0

    md = _invoke("report", run_file, tmp_path / "other.json", "--format", "md").stdout
    assert "Judges: Same conversations, judged by openai/judge-model and openai/other-judge" in md
    html = _invoke("report", run_file, tmp_path / "other.json", "-o", tmp_path / "r.html")
    assert "judges: Same conversations" in " ".join(html.stdout.split())
    assert 'class="judges"' in (tmp_path / "r.html").read_text()
