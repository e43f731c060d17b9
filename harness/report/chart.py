"""The pass^k chart: one curve per run with its 95% band, drawn as inline SVG by hand (as the
failures chart in `bars.py` is), so the HTML report needs nothing beyond the core install."""

from __future__ import annotations

from html import escape
from typing import Any

# Colours that stay apart for the usual handful of runs (then they repeat).
COLOURS = ("#4c8bf5", "#e5534b", "#2da44e", "#bf8700", "#8250df", "#1b7c83", "#cf222e", "#57606a")
WIDTH, HEIGHT = 700, 360
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 48  # room for the axes' labels
LEGEND_ROW = 18


def pass_hat_svg(runs: list[dict[str, Any]], names: list[str] | None = None) -> str:
    """An `<svg>` element for inline HTML: pass^k in percent (0-100) against k, each run's
    points joined by a line over its shaded confidence band, a legend at the lower left that
    names each run by `names` (default: its label)."""
    shown = dict(zip((run["label"] for run in runs), names or [], strict=False))
    curves = [(run["label"], _points(run)) for run in runs]
    curves = [(label, points) for label, points in curves if points]
    ks = sorted({k for _, points in curves for k, *_ in points}) or [1]
    k_low, k_high = ks[0], ks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(k: float) -> float:
        if k_high == k_low:
            return LEFT + plot_w / 2
        return LEFT + plot_w * (k - k_low) / (k_high - k_low)

    def y(percent: float) -> float:
        return TOP + plot_h * (1 - max(0.0, min(100.0, percent)) / 100)

    out = [
        f'<svg class="pass-hat-chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img" aria-label="pass^k with 95% confidence bands" '
        'font-family="system-ui,sans-serif" font-size="12">'
    ]
    for tick in range(0, 101, 20):  # horizontal grid and the y axis' labels
        out.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            'stroke="#d0d7de" stroke-width="1"/>'
            f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    for k in ks:  # the x axis' labels: every k some run has
        out.append(f'<text x="{x(k):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{k}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle">'
        "k (trials that must all succeed)</text>"
        f'<text transform="translate(14 {TOP + plot_h / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">pass^k (%)</text>'
    )
    for index, (label, points) in enumerate(curves):
        colour = COLOURS[index % len(COLOURS)]
        upper = [(x(k), y(high)) for k, _, _, high in points]
        lower = [(x(k), y(low)) for k, _, low, _ in reversed(points)]
        line = [(x(k), y(value)) for k, value, _, _ in points]
        out.append(f'<g class="run" data-label="{escape(label)}">')
        if len(points) > 1:
            out.append(
                f'<polygon points="{_coords(upper + lower)}" fill="{colour}" '
                'fill-opacity="0.18" stroke="none"/>'
            )
            out.append(
                f'<polyline points="{_coords(line)}" fill="none" stroke="{colour}" '
                'stroke-width="2"/>'
            )
        for (k, value, low, high), (px, py) in zip(points, line, strict=True):
            if len(points) == 1:  # a band needs two k: one k gets an error bar
                out.append(
                    f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{y(high):.1f}" y2="{y(low):.1f}" '
                    f'stroke="{colour}" stroke-opacity="0.5" stroke-width="6"/>'
                )
            out.append(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{colour}" data-k="{k}" '
                f'data-value="{value:.4f}"><title>{escape(label)}: pass^{k} = {value:.1f}% '
                f"(95% CI {low:.1f}-{high:.1f})</title></circle>"
            )
        out.append("</g>")
    legend_top = TOP + plot_h - LEGEND_ROW * len(curves) - 4
    for index, (label, _) in enumerate(curves):
        colour = COLOURS[index % len(COLOURS)]
        row = legend_top + index * LEGEND_ROW
        out.append(
            f'<rect x="{LEFT + 10}" y="{row + 3}" width="12" height="12" fill="{colour}"/>'
            f'<text x="{LEFT + 28}" y="{row + 13}">{escape(shown.get(label, label))}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def _points(run: dict[str, Any]) -> list[tuple[int, float, float, float]]:
    """(k, value, low, high) in percent, by k."""
    out = []
    for key in sorted(run.get("pass_hat") or {}, key=int):
        point = run["pass_hat"][key]
        if point.get("value") is None:
            continue
        low = point.get("ci_low", point["value"])
        high = point.get("ci_high", point["value"])
        out.append((int(key), point["value"] * 100, low * 100, high * 100))
    return out


def _coords(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
