"""The failures chart: one bar per diagnosis category, split by side, drawn as inline SVG by
hand (no plotting library), so the report's failures section needs nothing beyond the core."""

from __future__ import annotations

from html import escape
from typing import Any

SIDE_COLOURS = {"agent": "#e5534b", "user": "#4c8bf5", "infrastructure": "#9198a1"}
SIDE_LABELS = {"agent": "agent", "user": "user simulator", "infrastructure": "infrastructure"}
LABEL_W, BAR_W, COUNT_W, ROW_H, TOP = 190, 380, 60, 24, 28


def failures_svg(failures: dict[str, Any]) -> str:
    """Rows: each category with failures, then a total row per side; a legend on top."""
    rows: list[tuple[str, dict[str, int]]] = list(failures["by_category_and_side"].items())
    if failures.get("undiagnosed"):
        rows.append(("undiagnosed", {"unknown": failures["undiagnosed"]}))
    rows.append(("all failures, by side", dict(failures["by_side"])))
    biggest = max([sum(parts.values()) for _, parts in rows] + [1])
    width = LABEL_W + BAR_W + COUNT_W
    height = TOP + ROW_H * len(rows) + 6
    out = [
        f'<svg class="failures-chart" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="failed simulations by category and side">'
    ]
    x = LABEL_W
    for side, colour in SIDE_COLOURS.items():
        name = SIDE_LABELS[side]
        out.append(f'<rect x="{x}" y="6" width="12" height="12" fill="{colour}"/>')
        out.append(f'<text x="{x + 16}" y="16" font-size="12">{escape(name)}</text>')
        x += 20 + 7 * len(name) + 20
    for index, (label, parts) in enumerate(rows):
        y = TOP + index * ROW_H
        total = sum(parts.values())
        weight = ' font-weight="600"' if index == len(rows) - 1 else ""
        out.append(
            f'<g class="bar" data-category="{escape(label)}" data-count="{total}">'
            f'<text x="{LABEL_W - 8}" y="{y + 15}" font-size="12" text-anchor="end"{weight}>'
            f"{escape(label.replace('_', ' '))}</text>"
        )
        x = float(LABEL_W)
        for side, count in parts.items():
            if not count:
                continue
            w = BAR_W * count / biggest
            colour = SIDE_COLOURS.get(side, "#c5c9d2")
            out.append(
                f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW_H - 8}" '
                f'fill="{colour}" data-side="{escape(side)}" data-count="{count}">'
                f"<title>{escape(label)}: {count} ({escape(SIDE_LABELS.get(side, side))})</title>"
                "</rect>"
            )
            x += w
        out.append(f'<text x="{x + 6:.1f}" y="{y + 15}" font-size="12">{total}</text></g>')
    out.append("</svg>")
    return "".join(out)
