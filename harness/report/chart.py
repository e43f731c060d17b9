"""The pass^k chart: one curve per run with its 95% band, drawn by matplotlib as inline SVG.

matplotlib is the `report` extra; the chart is the only part of the report that needs it.
"""

from __future__ import annotations

import io
import re
from typing import Any


class ChartUnavailable(RuntimeError):
    pass


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ChartUnavailable(
            "the HTML report draws its chart with matplotlib: pip install 'tau-mcp[report]'"
        ) from None
    return plt


def pass_hat_svg(runs: list[dict[str, Any]]) -> str:
    """An SVG element (no XML prolog, no namespace URLs, no metadata) to inline in HTML."""
    plt = _pyplot()
    plt.rcParams["svg.fonttype"] = "none"  # keep text as text: smaller, selectable
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
    try:
        for run in runs:
            ks = sorted(int(k) for k in run["pass_hat"])
            if not ks:
                continue
            points = [run["pass_hat"][str(k)] for k in ks]
            values = [p["value"] * 100 for p in points]
            line = ax.plot(ks, values, marker="o", label=run["label"])[0]
            ax.fill_between(
                ks,
                [p["ci_low"] * 100 for p in points],
                [p["ci_high"] * 100 for p in points],
                color=line.get_color(),
                alpha=0.18,
                linewidth=0,
            )
        ax.set_xlabel("k (trials that must all succeed)")
        ax.set_ylabel("pass^k (%)")
        ax.set_ylim(0, 100)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.grid(alpha=0.3)
        if runs:
            ax.legend(loc="lower left", fontsize=8)
        fig.tight_layout()
        buffer = io.StringIO()
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    finally:
        plt.close(fig)
    return _inline(buffer.getvalue())


def _inline(svg: str) -> str:
    """Strip what inline SVG in HTML5 does not need and what would name outside addresses."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    return svg
