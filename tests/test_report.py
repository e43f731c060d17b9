"""`tau-harness report` and its statistics: intervals checked against hand computation,
comparisons on constructed runs whose answer is known, the HTML read back by value."""

from __future__ import annotations

import itertools
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.report.stats import (
    bootstrap_mean,
    mcnemar_exact,
    mcnemar_test,
    paired_difference,
    percentile_interval,
)


# --- statistics, by hand ---------------------------------------------------------------------
def test_percentile_interval_on_a_weighted_distribution():
    # Bootstrap distribution of the mean of [0, 1]: 0 (1/4), 0.5 (1/2), 1 (1/4).
    assert percentile_interval([0.0, 0.5, 1.0], [0.25, 0.5, 0.25]) == (0.0, 1.0)
    # Ten equally likely values: 2.5% and 97.5% of the mass fall on the first and last.
    assert percentile_interval(list(range(10))) == (0.0, 9.0)
    # 40 values: 2.5% of 40 is 1 value, 97.5% is 39 values.
    assert percentile_interval(list(range(40))) == (0.0, 38.0)


def test_bootstrap_of_two_tasks_is_the_exact_distribution():
    interval = bootstrap_mean([1.0, 0.0])
    assert (interval.estimate, interval.low, interval.high) == (0.5, 0.0, 1.0)


def test_bootstrap_small_case_matches_brute_force_enumeration():
    scores = [1.0, 1.0, 1.0, 0.0, 0.5]
    n = len(scores)
    # Every one of the n^n equally likely resamples, the slow way.
    means = [sum(scores[i] for i in pick) / n for pick in itertools.product(range(n), repeat=n)]
    expected = percentile_interval(means)
    got = bootstrap_mean(scores)
    assert got.estimate == pytest.approx(0.7)
    assert (got.low, got.high) == pytest.approx(expected)
    assert 0.0 < got.low < 0.7 < got.high <= 1.0


def test_constant_scores_have_a_zero_width_interval():
    interval = bootstrap_mean([1.0] * 30)
    assert (interval.low, interval.high) == (1.0, 1.0)


def test_mcnemar_exact_values():
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(0, 5) == pytest.approx(2 / 32)
    assert mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert mcnemar_exact(3, 3) == 1.0


def test_paired_difference_identical_and_different_runs():
    same = paired_difference([1.0, 0.0, 1.0, 1.0] * 5, [1.0, 0.0, 1.0, 1.0] * 5)
    assert same.difference.estimate == 0 and not same.significant
    better = paired_difference([1.0] * 30, [1.0] * 10 + [0.0] * 20)
    assert better.significant and better.difference.estimate == pytest.approx(20 / 30)
    assert "beats" in better.verdict("A", "B")


def test_mcnemar_only_where_it_applies():
    """Same tasks, one trial each, some discordant pair: the test; anything else: why not."""
    a = {str(t): [True] for t in range(30)}
    b = {str(t): [t < 10] for t in range(30)}
    applies = mcnemar_test(a, b)
    assert applies.p == pytest.approx(mcnemar_exact(20, 0)) and applies.p < 0.001
    assert "20 solved by the first run only, 0 by the second only" in applies.note
    same = mcnemar_test(a, dict(a))
    assert same.p is None and "no task was solved by one run only" in same.note
    fewer = mcnemar_test(a, {t: v for t, v in b.items() if t != "0"})
    assert fewer.p is None and "finished different ones (30 and 29, 29 in both)" in fewer.note
    trials = mcnemar_test({t: [True, False] for t in a}, {t: [True, True] for t in a})
    assert trials.p is None and "up to 2 trials per task" in trials.note


# --- constructed runs -----------------------------------------------------------------------
def _sim(task: str, trial: int, reward: float | None, ending: str = "user_stop") -> dict:
    info = None
    if ending != "infrastructure_error":
        info = {
            "reward": reward,
            "db_check": {"db_match": reward == 1.0, "db_reward": reward},
            "nl_assertions": [
                {"nl_assertion": "agent is polite", "met": True, "justification": "ok"}
            ],
            "info": {"judge": "judge-model", "cost": 0.001},
        }
    return {
        "id": f"{task}-{trial}-{reward}",
        "task_id": task,
        "trial": trial,
        "termination_reason": ending,
        "reward_info": info,
        "agent_cost": 0.01,
        "user_cost": 0.002,
        "duration": 1.5,
        "messages": [
            {"role": "assistant", "content": "Hi! How can I help?", "turn_idx": 0},
            {"role": "user", "content": "Cancel <my> order & refund", "turn_idx": 1},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "name": "cancel", "arguments": {"order": "#1"}}],
                "turn_idx": 2,
            },
            {
                "role": "tool",
                "id": "c1",
                "content": "done",
                "requestor": "assistant",
                "turn_idx": 3,
            },
        ],
    }


def _document(model: str, outcomes: dict[str, list[float | None]]) -> dict:
    sims = []
    for task, rewards in outcomes.items():
        for trial, reward in enumerate(rewards):
            ending = "infrastructure_error" if reward is None else "user_stop"
            sims.append(_sim(task, trial, reward, ending))
    return {
        "info": {
            "agent_info": {"implementation": "llm", "llm": model},
            "user_info": {"implementation": "llm", "llm": "user-model"},
            "environment_info": {"domain_name": "airline"},
            "num_trials": 2,
            "seed": 300,
            "judge_llm": "judge-model",
        },
        "tasks": [],
        "simulations": sims,
    }


def _write(tmp_path: Path, name: str, document: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


class _Values(HTMLParser):
    """Collects data-* attributes the report puts on every figure, and every URL it refers to."""

    def __init__(self) -> None:
        super().__init__()
        self.figures: dict[tuple[str, str], str] = {}
        self.verdicts: list[dict[str, str]] = []
        self.urls: list[str] = []
        self.embedded: list[str] = []
        self._in_data = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "data-metric" in a:
            self.figures[(a["data-run"], a["data-metric"])] = a["data-value"]
        if "data-significant" in a:
            self.verdicts.append(a)
        for key in ("src", "href", "action"):
            if a.get(key):
                self.urls.append(a[key])
        self._in_data = tag == "script" and a.get("id") == "report-data"

    def handle_data(self, data):
        if self._in_data:
            self.embedded.append(data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_data = False


def test_report_html_holds_the_json_figures_and_needs_no_network(tmp_path):
    outcomes = {str(t): [1.0, 1.0 if t % 2 else 0.0] for t in range(12)}
    outcomes["12"] = [1.0, None]  # an infrastructure error
    run = _write(tmp_path, "a.json", _document("model-a", outcomes))
    runner = CliRunner()
    html_path = tmp_path / "report.html"
    result = runner.invoke(app, ["report", str(run), "-o", str(html_path)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["report", str(run), "--format", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    html = html_path.read_text()
    parser = _Values()
    parser.feed(html)
    assert not re.search(r"https?://", html), "the report must not refer to the network"
    assert all(u.startswith("#") for u in parser.urls)
    assert json.loads("".join(parser.embedded)) == summary
    run0 = summary["runs"][0]
    assert run0["infra_errors"] == 1 and run0["tasks"] == 13
    # pass^1: 12 tasks with rates 1 or 0.5 (6 each) and task 12 with one success: (6 + 3 + 1) / 13
    assert run0["pass_hat"]["1"]["value"] == pytest.approx(10 / 13)
    for k, entry in run0["pass_hat"].items():
        assert float(parser.figures[("0", f"pass_hat_{k}")]) == pytest.approx(entry["value"])
    assert float(parser.figures[("0", "avg_reward")]) == pytest.approx(run0["avg_reward"]["value"])
    assert int(parser.figures[("0", "simulations")]) == run0["simulations"] == 25
    assert int(parser.figures[("0", "infra_errors")]) == 1
    assert float(parser.figures[("0", "cost_judge_total")]) == pytest.approx(0.025)
    assert run0["cost"]["judge"]["total"] == pytest.approx(0.025)
    # Every simulation's conversation is in the file, escaped.
    assert html.count('<template id="s0-') == 26
    assert "Cancel &lt;my&gt; order &amp; refund" in html


def test_report_comparisons_identical_and_different_runs(tmp_path):
    base = {str(t): [1.0, 1.0] if t < 15 else [0.0, 0.0] for t in range(30)}
    worse = {str(t): [1.0, 1.0] if t < 3 else [0.0, 0.0] for t in range(30)}
    a = _write(tmp_path, "a.json", _document("model-a", base))
    a2 = _write(tmp_path, "a2.json", _document("model-a", base))
    b = _write(tmp_path, "b.json", _document("model-b", worse))
    runner = CliRunner()
    result = runner.invoke(app, ["report", str(a), str(a2), str(b), "--format", "json"])
    assert result.exit_code == 0, result.output
    comparisons = json.loads(result.output)["comparisons"]
    assert len(comparisons) == 3
    same, a_vs_b = comparisons[0], comparisons[1]
    assert same["difference"] == 0 and same["significant"] is False and same["flips"] == []
    assert a_vs_b["significant"] is True
    assert a_vs_b["difference"] == pytest.approx(12 / 30)
    assert a_vs_b["ci_low"] > 0
    assert [f["task_id"] for f in a_vs_b["flips"]] == [str(t) for t in range(3, 15)]
    md = runner.invoke(app, ["report", str(a), str(b), "--format", "md"])
    assert md.exit_code == 0
    assert "| model | pass^1 | pass^2 | pass^3 | pass^4 | avg reward | cost/sim |" in md.output
    assert "beats" in md.output
    # Two trials per task: McNemar's one-outcome pairing does not apply, and the report says so.
    assert a_vs_b["mcnemar_p"] is None and "up to 2 trials per task" in a_vs_b["mcnemar_note"]
    assert "McNemar's test is not shown" in md.output
    out = tmp_path / "cmp.html"
    assert runner.invoke(app, ["report", str(a), str(a2), "-o", str(out)]).exit_code == 0
    parser = _Values()
    parser.feed(out.read_text())
    assert [v["data-significant"] for v in parser.verdicts] == ["false"]


def test_report_and_view_refuse_bad_input_in_one_sentence(tmp_path):
    runner = CliRunner()
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"reward_info": {"reward": 1.0}}]))
    for args in (["report", str(bad)], ["view", str(bad)], ["report", str(tmp_path / "no.json")]):
        result = runner.invoke(app, args)
        assert result.exit_code != 0
        assert "Traceback" not in result.output and result.output.count("\n") <= 2, result.output
    good = _write(tmp_path, "g.json", _document("m", {"1": [1.0]}))
    result = runner.invoke(app, ["report", str(good), "--format", "pdf"])
    assert result.exit_code != 0 and "unknown format" in result.output


def test_view_exact_task_id_wins_and_only_failed(tmp_path):
    runner = CliRunner()
    doc = _document("m", {"5": [1.0, 0.0], "50": [0.0, 1.0]})
    # Make a simulation id that starts with "5" belong to task 50.
    doc["simulations"][2]["id"] = "5abc"
    path = _write(tmp_path, "v.json", doc)
    result = runner.invoke(app, ["view", str(path), "--sim", "5"])
    assert result.exit_code == 0, result.output
    assert "task 5 - trial 0" in result.output and "task 5 - trial 1" in result.output
    assert "task 50" not in result.output
    failed = runner.invoke(app, ["view", str(path), "--sim", "5", "--only-failed"])
    assert "task 5 - trial 1" in failed.output and "task 5 - trial 0" not in failed.output
    other = _write(tmp_path, "w.json", _document("n", {"7": [0.0]}))
    both = runner.invoke(app, ["view", str(path), str(other), "--only-failed"])
    assert both.exit_code == 0, both.output
    assert "v.json" in both.output and "w.json" in both.output
    assert "success rate" in both.output


def test_html_report_draws_its_chart_without_matplotlib(tmp_path):
    """The base install has no plotting library: the pass^k chart is tau-mcp's own SVG, one
    point per run and k at the figure the JSON holds."""
    import subprocess
    import sys

    a = _write(
        tmp_path, "a.json", _document("model-a", {str(t): [1.0, t % 3 and 1.0] for t in range(9)})
    )
    b = _write(tmp_path, "b.json", _document("model-b", {str(t): [1.0, 0.0] for t in range(9)}))
    out = tmp_path / "r.html"
    blocker = (
        "import sys; sys.modules['matplotlib'] = None; "  # any import of it fails
        "from tau_mcp.harness.cli import app; app()"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocker, "report", str(a), str(b), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    html = out.read_text()
    summary = json.loads(
        CliRunner().invoke(app, ["report", str(a), str(b), "--format", "json"]).output
    )
    chart = html[html.index('<svg class="pass-hat-chart"') :]
    chart = chart[: chart.index("</svg>")]
    for run in summary["runs"]:
        group = chart[chart.index(f'data-label="{run["label"]}"') :]
        group = group[: group.index("</g>")]
        drawn = dict(re.findall(r'data-k="(\d+)" data-value="([\d.]+)"', group))
        assert drawn.keys() == run["pass_hat"].keys()
        for k, point in run["pass_hat"].items():
            assert float(drawn[k]) == pytest.approx(point["value"] * 100, abs=1e-4)
    assert "<polygon" in chart  # the confidence bands


def test_view_lists_tasks_in_natural_order(tmp_path):
    doc = _document("m", {"10": [1.0], "2": [0.0], "1": [1.0], "task_10": [1.0], "task_9": [0.0]})
    doc["simulations"].reverse()
    path = _write(tmp_path, "order.json", doc)
    result = CliRunner().invoke(app, ["view", str(path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    tasks_part, sims_part = result.output.split("Simulations", 1)
    tasks_part = tasks_part[tasks_part.rindex("Tasks") :]
    in_order = ["1", "2", "10", "task_9", "task_10"]
    assert re.findall(r"^│ (\S+) +│", tasks_part, re.M) == in_order
    assert re.findall(r"^│ \S+ +│ (\S+) +│", sims_part, re.M) == in_order


def test_report_and_view_escape_a_lone_surrogate(tmp_path):
    """A results file may hold a lone UTF-16 surrogate (valid JSON, not text: a model wrote it);
    every format and the console write it as its escape, `\\ud800`, instead of crashing."""
    document = _document("model-\udc80", {"1": [1.0], "2": [0.0]})
    document["simulations"][0]["messages"][0]["content"] = "bad \ud800 text"
    path = _write(tmp_path, "lone.json", document)
    runner = CliRunner()
    for fmt in ("html", "md", "json"):
        out = tmp_path / f"r.{fmt}"
        result = runner.invoke(app, ["report", str(path), "--format", fmt, "-o", str(out)])
        assert result.exit_code == 0, (fmt, result.output)
        text = out.read_text(encoding="utf-8")
        assert "\\udc80" in text, fmt
        if fmt == "html":  # the one format that holds the conversations
            assert "\\ud800" in text, fmt
    result = runner.invoke(app, ["report", str(path), "--format", "md"])  # to standard output
    assert result.exit_code == 0 and "model-\\udc80" in result.output, result.output
    result = runner.invoke(app, ["view", str(path), "--sim", "1"])
    assert result.exit_code == 0 and "bad \\ud800 text" in result.output, result.output
