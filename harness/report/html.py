"""The report as one self-contained HTML file: inline CSS, inline SVG chart, a few lines of
inline script for sorting and opening simulations, and the report's JSON embedded for tools.
Nothing in it refers to the network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from tau_mcp.grading.diagnosis import diagnosis_of
from tau_mcp.harness.report.bars import failures_svg
from tau_mcp.harness.report.chart import pass_hat_svg
from tau_mcp.harness.report.markdown import LEADERBOARD_HEADER, money, pct
from tau_mcp.harness.report.robustness import robustness_sentence
from tau_mcp.harness.robustness import recovery_line

_TEMPLATES = Path(__file__).with_name("templates")


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
        recovery_line=recovery_line,
        robustness_sentence=robustness_sentence,
    )
    return env


def embedded_json(value: Any) -> str:
    """JSON safe inside a <script> element (no `</script>` can close it early)."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render(report: dict[str, Any], simulations: list[list[dict[str, Any]]]) -> str:
    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        sims=simulations,
        chart_svg=pass_hat_svg(report["runs"]),
        leaderboard_header=LEADERBOARD_HEADER,
        report_json=embedded_json(report),
    )
