"""`tau-harness report`: load results files, build the figures once, write one format."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tau_mcp.harness.report import summary
from tau_mcp.harness.results import atomic_write, load_results

FORMATS = ("html", "md", "json")


class ReportError(ValueError):
    pass


def escape_surrogates(text: str) -> str:
    """`text` with every lone UTF-16 surrogate written as its escape (`\\ud800`). A results file
    may hold one (valid JSON, but not text: a model's output can carry it), and UTF-8 cannot
    encode it; the console shows it the same way (`tau-harness` writes its standard output with
    `backslashreplace`)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def write_report(
    files: list[Path], fmt: str, output: Path | None
) -> tuple[Path | None, dict[str, Any]]:
    """Write the report; return where (None when it went to standard output) and its
    figures."""
    if fmt not in FORMATS:
        raise ReportError(f"unknown format '{fmt}': use one of {', '.join(FORMATS)}")
    documents = [(Path(f), load_results(Path(f))) for f in files]
    report = summary.build(documents)
    if fmt == "json":
        text = json.dumps(report, indent=1, default=str) + "\n"
    elif fmt == "md":
        from tau_mcp.harness.report.markdown import render

        text = render(report)
    else:
        from tau_mcp.harness.report.html import render

        text = render(report, [doc["simulations"] for _, doc in documents])
        output = output or Path("report.html")
    text = escape_surrogates(text)
    if output is None:
        sys.stdout.write(text)
        return None, report
    try:
        atomic_write(output, text)
    except OSError as exc:
        raise ReportError(f"cannot write {output}: {exc.strerror or exc}") from None
    return output, report
