"""The report as one self-contained HTML file: inline CSS, inline SVG chart, a few lines of
inline script for sorting and opening simulations, and the report's JSON embedded for tools.
Nothing in it refers to the network.

The page stays short however many tasks a run has: the task x trial grid puts many tasks on a
line (each task a tile of its trials' cells), and a list longer than `COLLAPSE_OVER` items sits
behind its count in a `<details>` element."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from tau_mcp.grading.diagnosis import diagnosis_of
from tau_mcp.harness.report.bars import failures_svg
from tau_mcp.harness.report.chart import pass_hat_svg
from tau_mcp.harness.report.markdown import LEADERBOARD_HEADER, mixes_domains, money, pct

_TEMPLATES = Path(__file__).with_name("templates")

#: A list longer than this is closed behind a summary that counts it.
COLLAPSE_OVER = 12
# The grid's geometry in CSS pixels (the template's CSS uses the same numbers): the width a
# card of the page's main column leaves for it, a trial cell with its margin, one character of
# a task id (12 px monospace), the gap between tiles and a tile's own padding.
GRID_WIDTH, CELL, CHAR, GAP, TILE_PADDING = 1120, 16, 7.3, 8, 14
#: Trials on one line of a tile (more wrap onto a second line), task-id characters shown.
CELLS_PER_LINE, MAX_LABEL = 10, 16


def grid_layout(grid: dict[str, list[Any]]) -> dict[str, int]:
    """How the task x trial grid of a run is laid out: every task a tile (its id, then its
    trials' cells) of one width, `columns` tiles on a line, so `rows` lines in all."""
    tasks = len(grid)
    trials = max((len(cells) for cells in grid.values()), default=1)
    label = min(max((len(task) for task in grid), default=1), MAX_LABEL)
    per_line = max(1, min(trials, CELLS_PER_LINE))
    tile = label * CHAR + per_line * CELL + TILE_PADDING
    columns = max(1, min(tasks, int((GRID_WIDTH + GAP) // (tile + GAP))))
    return {
        "columns": columns,
        "rows": math.ceil(tasks / columns),
        "label": label,
        "per_line": per_line,
    }


def flip_groups(comparison: dict[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The tasks that flip, split by the run that solves them: (that run's label, its tasks)."""
    flips = comparison.get("flips") or []
    return [
        (comparison["a"], [f for f in flips if f["a"] >= 0.5]),
        (comparison["b"], [f for f in flips if f["b"] >= 0.5]),
    ]


def _mark(value: Any) -> str:
    if value is None:
        return "n/a"
    return "✔" if value else "✘"


def _environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals.update(
        pct=pct,
        money=money,
        mark=_mark,
        tojson=lambda v: json.dumps(v, ensure_ascii=False, default=str),
        failures_svg=failures_svg,
        diagnosis_of=diagnosis_of,
        grid_layout=grid_layout,
        flip_groups=flip_groups,
        collapse_over=COLLAPSE_OVER,
        cell_px=CELL,
    )
    return env


def embedded_json(value: Any) -> str:
    """JSON safe inside a <script> element (no `</script>` can close it early)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(report: dict[str, Any], simulations: list[list[dict[str, Any]]]) -> str:
    template = _environment().get_template("report.html.j2")
    mixed = mixes_domains(report["runs"])
    names = [
        f"{run['label']} · {run['settings']['domain']}" if mixed else run["label"]
        for run in report["runs"]
    ]
    return template.render(
        report=report,
        sims=simulations,
        mixed_domains=mixed,
        chart_svg=pass_hat_svg(report["runs"], names),
        leaderboard_header=LEADERBOARD_HEADER,
        report_json=embedded_json(report),
    )
