"""The HTML report's layout, read back as a tree: a grid of many tasks per line (its lines grow
with tasks / columns, not with tasks), long lists behind their count, cost under its own header,
p-values that never read `p = 0.0000`, the domain beside each run when a report mixes domains,
and a banking run's retrieval config wherever the run is named."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.report.html import COLLAPSE_OVER, grid_layout
from tau_mcp.harness.report.stats import format_p, mcnemar_exact

VOID = {"meta", "br", "hr", "img", "input", "link"}


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    content: list[Node | str] = field(default_factory=list)  # text and elements, in order

    @property
    def children(self) -> list[Node]:
        return [c for c in self.content if isinstance(c, Node)]

    @property
    def classes(self) -> list[str]:
        return (self.attrs.get("class") or "").split()

    def text(self) -> str:
        inner = "".join(c if isinstance(c, str) else c.text() for c in self.content)
        return " ".join(inner.split())

    def find(self, tag: str | None = None, cls: str | None = None) -> list[Node]:
        """Every node below this one with the tag and class, in document order."""
        out = []
        for child in self.children:
            if (tag is None or child.tag == tag) and (cls is None or cls in child.classes):
                out.append(child)
            out += child.find(tag, cls)
        return out


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root = Node("root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].content.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag, attrs):
        self.stack[-1].content.append(Node(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data):
        self.stack[-1].content.append(data)


def page(html: str) -> Node:
    tree = _Tree()
    tree.feed(html)
    return tree.root


def visible(root: Node) -> Node:
    """The page without the conversations' templates, the embedded JSON and the script."""
    body = root.find("main")[0]
    kept = [
        c
        for c in body.content
        if isinstance(c, str) or c.tag not in ("template", "script", "dialog")
    ]
    return Node("main", {}, kept)


# --- runs -------------------------------------------------------------------------------------
def _sim(task: str, trial: int, passed: bool) -> dict:
    reward = 1.0 if passed else 0.0
    info: dict = {"reward": reward, "db_check": {"db_match": passed, "db_reward": reward}}
    if not passed:
        info["info"] = {
            "diagnosis": {
                "category": "missing_action",
                "side": "agent",
                "summary": "a gold write never happened",
                "ending": {"kind": "user_stop", "termination_reason": "user_stop", "by": "user"},
            }
        }
    return {
        "id": f"{task}-{trial}",
        "task_id": task,
        "trial": trial,
        "termination_reason": "user_stop",
        "reward_info": info,
        "agent_cost": 0.02,
        "user_cost": 0.004,
        "duration": 1.0,
        "messages": [{"role": "assistant", "content": "Hello", "turn_idx": 0}],
    }


def _document(
    outcomes: dict[str, list[bool]],
    domain: str = "retail",
    model: str = "model-a",
    **info,
) -> dict:
    return {
        "info": {
            "agent_info": {"implementation": "llm", "llm": model},
            "user_info": {"implementation": "llm", "llm": "user-model"},
            "environment_info": {"domain_name": domain},
            "num_trials": max(len(v) for v in outcomes.values()),
            "seed": 300,
            **info,
        },
        "tasks": [],
        "simulations": [
            _sim(task, trial, passed)
            for task, trials in outcomes.items()
            for trial, passed in enumerate(trials)
        ],
    }


def _write(folder: Path, name: str, document: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(document))
    return path


def _report(*files: Path, fmt: str = "html", out: Path | None = None) -> str:
    out = out or files[0].with_name("report." + fmt)
    result = CliRunner().invoke(app, ["report", *map(str, files), "--format", fmt, "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out.read_text()


TASKS = [str(t) for t in range(114)]


# --- the grid ---------------------------------------------------------------------------------
def test_the_grid_puts_many_tasks_on_a_line(tmp_path):
    """114 tasks x 4 trials: one tile per task holding its 4 trial cells, laid out on
    ceil(114 / columns) lines of at least 8 tiles, and no row per task anywhere on the page."""
    run = _write(tmp_path, "a.json", _document({t: [True, False, True, True] for t in TASKS}))
    html = _report(run)
    grids = visible(page(html)).find("div", "tiles")
    assert len(grids) == 1
    grid = grids[0]
    tiles = [c for c in grid.children if "tile" in c.classes]
    assert [t.attrs["data-task"] for t in tiles] == TASKS
    assert all(len(t.find("button", "cell")) == 4 for t in tiles)
    assert all(t.attrs["data-passed"] == "3" for t in tiles)
    columns, rows = int(grid.attrs["data-columns"]), int(grid.attrs["data-rows"])
    assert columns >= 8 and rows == math.ceil(114 / columns) <= 15
    assert f"--columns:{columns}" in grid.attrs["style"]
    assert "repeat(var(--columns)" in html  # the CSS lays tiles out on that many columns
    assert not re.search(r"<tr[^>]*data-task", html), "no table row per task"
    # Every cell still opens its simulation's conversation.
    ids = {b.attrs["data-sim"] for t in tiles for b in t.find("button", "cell")}
    assert len(ids) == 456 and all(html.count(f'<template id="{i}"') == 1 for i in ids)


def test_grid_lines_grow_with_tasks_over_columns():
    for tasks, trials in ((114, 4), (1000, 1), (50, 16), (9, 2)):
        grid = {str(t): [None] * trials for t in range(tasks)}
        layout = grid_layout(grid)
        assert layout["rows"] == math.ceil(tasks / layout["columns"])
        assert 1 <= layout["columns"] <= tasks
    short = grid_layout({str(t): [None] * 4 for t in range(114)})
    long_ids = grid_layout({f"task_{t:03d}": [None] * 4 for t in range(114)})
    many_trials = grid_layout({str(t): [None] * 16 for t in range(114)})
    assert short["columns"] > long_ids["columns"] >= 5
    assert many_trials["per_line"] == 10 and many_trials["columns"] >= 4  # 16 trials wrap


# --- long lists -------------------------------------------------------------------------------
def _flip_pair(tmp_path: Path, flips: int, trials: int = 1) -> tuple[Path, Path]:
    a = {t: [True] * trials for t in TASKS}
    b = {t: [int(t) >= flips] * trials for t in TASKS}
    return (
        _write(tmp_path, "a.json", _document(a, model="model-a")),
        _write(tmp_path, "b.json", _document(b, model="model-b")),
    )


def test_the_tasks_that_flip_sit_behind_their_count(tmp_path):
    html = _report(*_flip_pair(tmp_path, 103))
    flips = visible(page(html)).find("details", "flips")
    assert len(flips) == 1
    details = flips[0]
    assert details.attrs["data-count"] == "103" and "open" not in details.attrs
    summary = details.find("summary")[0].text()
    assert summary.startswith("103 tasks flip: 103 solved by model-a (a) only, 0 solved by")
    chips = details.find("span", "chip")
    assert [c.attrs["data-task"] for c in chips] == TASKS[:103]
    assert chips[0].text() == "0 100→0%"
    # No list on the page outside a <details> runs longer than the collapse limit.
    for table in visible(page(html)).find("table"):
        assert len(table.find("tr")) <= COLLAPSE_OVER + 2, table.attrs


def test_a_short_list_of_flips_is_shown_open(tmp_path):
    html = _report(*_flip_pair(tmp_path, 3))
    details = visible(page(html)).find("details", "flips")[0]
    assert details.attrs["data-count"] == "3" and "open" in details.attrs
    assert [c.attrs["data-task"] for c in details.find("span", "chip")] == ["0", "1", "2"]


# --- cost, p-values ---------------------------------------------------------------------------
def test_cost_has_its_own_header(tmp_path):
    run = _write(tmp_path, "a.json", _document({t: [True, False] for t in TASKS[:20]}))
    main = visible(page(_report(run)))
    for table in main.find("table"):
        heads = [th.text() for th in table.find("tr")[0].find("th")] if table.find("tr") else []
        body = " ".join(r.text() for r in table.find("tr")[1:])
        if "95% CI" in heads:
            assert "cost" not in body.lower() and "$" not in body, heads
    costs = main.find("table", "costs")
    assert len(costs) == 1
    rows = costs[0].find("tr")
    assert [th.text() for th in rows[0].find("th")] == ["cost of", "total", "per simulation"]
    assert [r.attrs["data-part"] for r in rows[1:]] == ["agent", "user", "judge", "all"]
    agent = [td.text() for td in rows[1].find("td")]
    assert agent == ["agent", "$0.8000", "$0.0200"]  # 40 simulations at $0.02
    md = _report(run, fmt="md")
    assert "| cost | total | per simulation |" in md
    assert "| agent | $0.8000 | $0.0200 |" in md
    metrics = md[md.index("| metric (percent) |") :]
    assert "cost" not in metrics[: metrics.index("\n\n")]


def test_p_values_below_the_fourth_decimal_read_p_less_than():
    assert format_p(0.0) == "p < 0.0001"
    assert format_p(mcnemar_exact(103, 0)) == "p < 0.0001"
    assert format_p(0.0000999) == "p < 0.0001"
    assert format_p(0.0001) == "p = 0.0001"
    assert format_p(0.03125) == "p = 0.0312"
    assert format_p(1.0) == "p = 1.0000"


def test_the_report_never_writes_p_equals_zero(tmp_path):
    """103 tasks solved by one run only, one trial each: McNemar's exact p is about 1e-31."""
    files = _flip_pair(tmp_path, 103)
    html, md = _report(*files), _report(*files, fmt="md")
    note = visible(page(html)).find("div", "mcnemar")[0]
    assert note.attrs["data-applies"] == "true"
    assert note.text().endswith(
        "(103 solved by the first run only, 0 by the second only): p < 0.0001."
    )
    assert "p < 0.0001" in md
    for text in (html, md):
        assert "p = 0.0000" not in text


# --- domains ----------------------------------------------------------------------------------
def _leaderboard(html: str) -> tuple[list[str], list[list[str]]]:
    table = [t for t in page(html).find("table") if t.attrs.get("id") == "leaderboard"][0]
    rows = table.find("tr")
    return [th.text() for th in rows[0].find("th")], [
        [td.text() for td in r.find("td")] for r in rows[1:]
    ]


def test_a_domain_column_when_the_report_mixes_domains(tmp_path):
    retail = _write(tmp_path, "r.json", _document({t: [True] for t in TASKS[:10]}))
    airline = _write(
        tmp_path, "air.json", _document({t: [False] for t in TASKS[:10]}, domain="airline")
    )
    html = _report(retail, airline)
    head, rows = _leaderboard(html)
    assert head[:2] == ["model", "domain"] and len(head) == 8
    assert [r[:2] for r in rows] == [["model-a (r)", "retail"], ["model-a (air)", "airline"]]
    legend = html[html.index('<svg class="pass-hat-chart"') :]
    assert "model-a (r) · retail" in legend and "model-a (air) · airline" in legend
    md = _report(retail, airline, fmt="md")
    assert "| model | domain | pass^1 |" in md and "| model-a (air) | airline | 0.0 |" in md
    assert "| model | domain | failed |" in md
    # One domain: no such column.
    other = _write(tmp_path, "r2.json", _document({t: [False] for t in TASKS[:10]}))
    head, rows = _leaderboard(_report(retail, other))
    assert "domain" not in head and len(head) == 7 and len(rows[0]) == 7
    assert "| model | pass^1 |" in _report(retail, other, fmt="md")


# --- retrieval configs ------------------------------------------------------------------------
def _banking(tmp_path: Path, name: str, **info) -> Path:
    doc = _document({f"task_{t:03d}": [True, t % 3 > 0] for t in range(12)}, "banking_knowledge")
    doc["info"].update(info)
    return _write(tmp_path, name, doc)


def test_a_banking_run_is_named_with_its_retrieval_config(tmp_path):
    bm25 = _banking(
        tmp_path, "bk1.json", retrieval_config="bm25", retrieval_config_kwargs={"top_k": 5}
    )
    grep = _banking(tmp_path, "bk2.json", retrieval_config="grep_only")
    html = _report(bm25, grep)
    one, two = "model-a (bk1; retrieval bm25 top_k=5)", "model-a (bk2; retrieval grep_only)"
    # Wherever a run is named (leaderboard, chart, failures, comparison, its section, the
    # conversations, the embedded JSON), it is named with its config.
    assert html.count("(bk1") == html.count(one) >= 6
    assert html.count("(bk2") == html.count(two) >= 6
    main = visible(page(html))
    assert [h.text() for h in main.find("h2")][-2:] == [one, two]
    assert [td.text() for td in main.find("td", "retrieval")] == ["bm25 top_k=5", "grep_only"]
    verdict = main.find("div", "verdict")[0].text()
    assert one in verdict and two in verdict
    _, rows = _leaderboard(html)
    assert [r[0] for r in rows] == [one, two]
    md = _report(bm25, grep, fmt="md")
    assert md.count("(bk1") == md.count(one) and f"## {one}" in md
    assert "Domain banking_knowledge (retrieval config bm25 top_k=5)" in md
    # `view` shares the summary, so it names the run the same way.
    shown = CliRunner().invoke(app, ["view", str(bm25)], env={"COLUMNS": "250"})
    assert shown.exit_code == 0 and "retrieval bm25 top_k=5" in shown.output, shown.output


def test_a_banking_run_without_a_recorded_config_says_so(tmp_path):
    unknown = _banking(tmp_path, "bk.json")
    retail = _write(tmp_path, "r.json", _document({t: [True] for t in TASKS[:5]}))
    summary = json.loads(_report(unknown, retail, fmt="json"))
    labels = [run["label"] for run in summary["runs"]]
    assert labels == ["model-a (bk; retrieval not recorded)", "model-a (r)"]
    assert [run["settings"]["retrieval"] for run in summary["runs"]] == ["not recorded", None]


@pytest.mark.parametrize("fmt", ["html", "md", "json"])
def test_other_domains_carry_no_retrieval_config(tmp_path, fmt):
    retail = _write(tmp_path, "r.json", _document({t: [True] for t in TASKS[:5]}))
    assert "retrieval" not in _report(retail, fmt=fmt).replace('"retrieval', "").lower()
