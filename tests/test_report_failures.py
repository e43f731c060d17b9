"""The failures section of `tau-harness report` and `view --why`: counts by category and side,
reviews and the diagnostic pass^k, the noise figures, read back by value from JSON, HTML and
Markdown on a constructed run whose answers are worked out by hand."""

from __future__ import annotations

import json
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.report.stats import detectable_difference, trial_variances


def _diagnosis(category: str, side: str, pending: bool = False) -> dict:
    return {
        "version": 1,
        "category": category,
        "side": side,
        "summary": f"{category} happened",
        "failed_components": ["DB"],
        "ending": {"termination_reason": "user_stop", "kind": "user_stop", "by": "user"},
        "user_ended_with_write_pending": pending,
        "db_diff": [
            {
                "db": "agent_db",
                "table": "orders",
                "id": "#W1",
                "field": "status",
                "got": "pending",
                "expected": "cancelled",
            }
        ],
        "db_diff_more": 0,
        "missing_actions": [],
        "unexpected_writes": [],
        "unmet_env_assertions": [],
        "missing_information": [],
        "failed_nl_assertions": [],
        "tool_errors": {
            "agent": {"count": 0, "examples": []},
            "user": {"count": 0, "examples": []},
        },
        "left_gold_plan": None,
    }


def _review(user_hindered: bool, agent_critical: bool = False) -> dict:
    errors = []
    if user_hindered:
        errors.append({"source": "user", "severity": "critical_hindered", "reasoning": "lied"})
    if agent_critical:
        errors.append({"source": "agent", "severity": "critical", "reasoning": "skipped it"})
    return {
        "summary": "reviewed",
        "agent_error": agent_critical,
        "user_error": user_hindered,
        "critical_user_error": user_hindered,
        "has_errors": bool(errors),
        "errors": errors,
        "cost": 0.01,
    }


def _sim(task: str, trial: int, passed: bool, diagnosis=None, review=None, infra=False) -> dict:
    sim = {
        "id": f"{task}-{trial}",
        "task_id": task,
        "trial": trial,
        "termination_reason": "infrastructure_error" if infra else "user_stop",
        "reward_info": None
        if infra
        else {
            "reward": 1.0 if passed else 0.0,
            "reward_breakdown": {"DB": 1.0 if passed else 0.0},
            "info": {"diagnosis": diagnosis} if diagnosis else {},
        },
        "agent_cost": 0.02,
        "user_cost": 0.01,
        "messages": [{"role": "assistant", "content": "Hi", "turn_idx": 0}],
        "info": {"error": "TimeoutError: model did not answer"} if infra else {},
    }
    if review is not None:
        sim["review"] = review
        sim["auth_classification"] = {"status": "succeeded", "reasoning": "ok", "cost": 0.005}
    return sim


def _document() -> dict:
    """Six tasks, two trials. Task 1 passes twice; task 2 fails once (wrong arguments, agent);
    task 3 fails twice (premature user end with the pending flag, both blamed on the user by
    the review); task 4 fails once undiagnosed; task 5 fails once, its review blames both sides
    (so it stays in the diagnostic); task 6 has an infrastructure error, then a pass."""
    sims = [
        _sim("1", 0, True, review=_review(False)),
        _sim("1", 1, True),
        _sim("2", 0, True),
        _sim("2", 1, False, _diagnosis("wrong_arguments", "agent"), _review(False, True)),
        _sim("3", 0, False, _diagnosis("premature_user_end", "user", True), _review(True)),
        _sim("3", 1, False, _diagnosis("premature_user_end", "user", True), _review(True)),
        _sim("4", 0, True),
        _sim("4", 1, False),
        _sim("5", 0, True),
        _sim("5", 1, False, _diagnosis("missing_action", "agent"), _review(True, True)),
        _sim("6", 0, False, infra=True),
        _sim("6", 0, True),
        _sim("6", 1, True),
    ]
    return {
        "info": {
            "agent_info": {"implementation": "llm", "llm": "model-a"},
            "user_info": {"implementation": "llm", "llm": "user-model"},
            "environment_info": {"domain_name": "retail"},
            "num_trials": 2,
            "seed": 300,
        },
        "tasks": [],
        "simulations": sims,
    }


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(_document()))
    return path


def test_noise_figure_by_hand():
    # Two tasks with two trials: rates 1/2 and 1 -> unbiased variances 0.5 and 0.
    assert trial_variances([[True, False], [True, True]]) == [0.5, 0.0]
    z = 1.959963984540054
    assert detectable_difference([[True, False], [True, True]]) == pytest.approx(
        z * math.sqrt(2 * (0.5 / 2)) / 2
    )
    # One trial per task: the pooled p(1-p) of the run stands in for each task's.
    assert trial_variances([[True], [False], [False], [False]]) == [0.1875] * 4
    assert detectable_difference([[True]] * 50) == 0.0


def test_report_json_failures(run_file):
    result = CliRunner().invoke(app, ["report", str(run_file), "--format", "json"])
    assert result.exit_code == 0, result.output
    run = json.loads(result.output)["runs"][0]
    failures = run["failures"]
    assert failures["failed"] == 5  # the superseded infrastructure error is not counted
    assert failures["by_category"] == {
        "wrong_arguments": 1,
        "premature_user_end": 2,
        "missing_action": 1,
    }
    assert failures["by_side"] == {"agent": 2, "user": 2, "infrastructure": 0}
    assert failures["undiagnosed"] == 1
    assert failures["user_ended_with_write_pending"] == 2
    reviews = run["reviews"]
    assert (reviews["reviewed"], reviews["user_caused"], reviews["agent_error"]) == (5, 2, 2)
    assert reviews["auth"] == {"succeeded": 5, "failed": 0, "not_needed": 0}
    assert reviews["cost"] == pytest.approx(5 * 0.015)
    assert run["cost"]["review"]["total"] == pytest.approx(0.075)
    assert run["cost"]["all"]["total"] == pytest.approx(12 * 0.03)  # reviews kept apart
    # The score: tasks 1..6 pass^1 = (1 + .5 + 0 + .5 + .5 + 1) / 6
    assert run["pass_hat"]["1"]["value"] == pytest.approx(3.5 / 6)
    # Diagnostic: task 3 loses both trials (user-caused), so it has no pass^k; task 5's review
    # also blames the agent, so it stays: (1 + .5 + .5 + .5 + 1) / 5 over the other five tasks.
    excluded = run["pass_hat_excluding_user_caused"]
    assert excluded["excluded"] == 2
    assert excluded["pass_hat"]["1"]["value"] == pytest.approx(3.5 / 5)
    assert excluded["pass_hat"]["1"]["tasks"] == 5
    assert excluded["pass_hat"]["2"]["value"] == pytest.approx(2 / 5)
    noise = run["noise"]
    expected = detectable_difference(
        [[True, True], [True, False], [False, False], [True, False], [True, False], [True, True]]
    )
    assert noise["detectable_difference"] == pytest.approx(expected)
    assert f"{expected * 100:.1f} points" in noise["statement"]
    cells = {c["id"]: c for cells in run["grid"].values() for c in cells}
    assert cells["2-1"]["diagnosis"]["category"] == "wrong_arguments"
    assert cells["2-1"]["review"]["agent_error"] is True
    assert cells["1-1"]["diagnosis"] is None and cells["1-1"]["review"] is None


class _Failures(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, int] = {}
        self.sides: dict[str, int] = {}
        self.bars: dict[str, int] = {}
        self.figures: dict[str, str] = {}
        self.diagnoses: list[dict[str, str]] = []
        self.flags = 0
        self._table = False
        self._row: str | None = None
        self.diagnostic_text: list[str] = []
        self._diagnostic = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and "failure-table" in (a.get("class") or ""):
            self._table = True
        if self._table and tag == "tr" and "data-category" in a:
            self._row = a["data-category"]
            self.rows[self._row] = int(a["data-count"])
        if self._table and self._row == "all" and "data-side" in a:
            self.sides[a["data-side"]] = int(a["data-count"])
        if tag == "g" and "data-category" in a:
            self.bars[a["data-category"]] = int(a["data-count"])
        if "data-metric" in a:
            self.figures[a["data-metric"]] = a["data-value"]
        if "diagnosis" in (a.get("class") or "").split():
            self.diagnoses.append(a)
        if a.get("data-flag") == "user_ended_with_write_pending":
            self.flags += 1
        if tag == "div" and "diagnostic" in (a.get("class") or "").split():
            self._diagnostic += 1
        elif tag == "div" and self._diagnostic:
            self._diagnostic += 1

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = False
        if tag == "div" and self._diagnostic:
            self._diagnostic -= 1

    def handle_data(self, data):
        if self._diagnostic:
            self.diagnostic_text.append(data)


def test_report_html_failures_section(run_file, tmp_path):
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", str(run_file), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = _Failures()
    page.feed(out.read_text())
    assert page.rows == {
        "wrong_arguments": 1,
        "premature_user_end": 2,
        "missing_action": 1,
        "all": 4,
    }
    assert page.sides == {"agent": 2, "user": 2, "infrastructure": 0}
    assert page.bars == {
        "wrong_arguments": 1,
        "premature_user_end": 2,
        "missing_action": 1,
        "undiagnosed": 1,
        "all failures, by side": 4,
    }
    assert page.figures["failed"] == "5" and page.figures["undiagnosed"] == "1"
    assert page.figures["user_ended_with_write_pending"] == "2"
    assert page.figures["user_caused"] == "2"
    assert float(page.figures["pass_hat_excluding_user_caused_1"]) == pytest.approx(3.5 / 5)
    assert float(page.figures["detectable_difference"]) > 0
    assert float(page.figures["cost_review_total"]) == pytest.approx(0.075)
    text = " ".join(" ".join(page.diagnostic_text).split())
    assert text.startswith("Diagnostic, not the score:")
    # Each failed simulation's dialog explains it; the infrastructure error too.
    categories = sorted(d["data-category"] for d in page.diagnoses)
    assert categories == sorted(
        ["wrong_arguments", "premature_user_end", "premature_user_end", "missing_action"]
        + ["infrastructure"]
    )
    assert page.flags == 2


def test_report_markdown_carries_the_breakdown(run_file):
    result = CliRunner().invoke(app, ["report", str(run_file), "--format", "md"])
    assert result.exit_code == 0, result.output
    md = result.output
    assert "| model | pass^1 | pass^2 | pass^3 | pass^4 | avg reward | cost/sim |" in md
    assert "| model | failed | agent | user simulator | infrastructure | categories |" in md
    assert (
        "| model-a (run) | 5 | 2 | 2 | 0 | wrong_arguments 1, premature_user_end 2, "
        "missing_action 1, undiagnosed 1 |"
    ) in md
    assert "| premature_user_end | 0 | 2 | 0 | 2 |" in md
    assert "**Diagnostic, not the score:**" in md
    assert "cannot be told from noise at 95%" in md


def test_comparisons_say_whether_the_gap_exceeds_the_noise(tmp_path):
    def doc(rates: list[list[float]]) -> dict:
        document = _document()
        document["simulations"] = [
            _sim(str(t), k, r == 1.0)
            for t, trials in enumerate(rates)
            for k, r in enumerate(trials)
        ]
        return document

    same = [[1.0, 0.0]] * 20
    better = [[1.0, 1.0]] * 20
    paths = []
    for name, rates in (("a", same), ("b", same), ("c", better)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc(rates)))
        paths.append(str(path))
    result = CliRunner().invoke(app, ["report", *paths, "--format", "json"])
    assert result.exit_code == 0, result.output
    a_b, a_c, _ = json.loads(result.output)["comparisons"]
    assert a_b["noise"]["exceeds"] is False and "does not exceed" in a_b["noise"]["statement"]
    # 20 tasks at rate 1/2 with 2 trials (variance 0.5 each) against 20 certain ones.
    expected = 1.959963984540054 * math.sqrt(20 * (0.5 / 2)) / 20
    assert a_c["noise"]["detectable_difference"] == pytest.approx(expected)
    assert a_c["noise"]["exceeds"] is True


def test_view_why_prints_each_failure(run_file):
    result = CliRunner().invoke(app, ["view", str(run_file), "--why"])
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())  # the console wraps long lines
    assert out.count("why: premature_user_end (user simulator)") == 2
    assert "why: wrong_arguments (agent): wrong_arguments happened" in out
    assert 'agent_db orders.#W1.status: got "pending", expected "cancelled"' in out
    assert "the user ended the call while a gold write was still pending" in out
    assert "task 4) failed before tau-mcp diagnosed failures" in out
    assert "why: infrastructure (infrastructure)" in out
    assert "LLM review: reviewed" in out
    one = CliRunner().invoke(app, ["view", str(run_file), "--why", "--sim", "1-0"])
    assert one.exit_code == 0 and "passed: nothing to diagnose" in one.output


def test_summary_says_na_when_no_trial_varied(run_file):
    """A run with no variation between trials has no noise estimate: the summary says n/a, not
    '0.0 points' (which would read as a perfectly tight bound)."""
    from rich.console import Console

    from tau_mcp.harness.report.console import summary_table

    result = CliRunner().invoke(app, ["report", str(run_file), "--format", "json"])
    run = json.loads(result.output)["runs"][0]

    def row_for(value: float) -> str:
        run["noise"] = {**run["noise"], "detectable_difference": value}
        console = Console(width=200, record=True)
        console.print(summary_table(run))
        return console.export_text()

    assert "n/a (no variation between trials observed)" in row_for(0.0)
    assert "19.6 points" in row_for(0.196)
