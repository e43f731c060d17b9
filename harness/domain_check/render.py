"""A domain check's report on the terminal (a table of findings, then a summary with the
stages' timings) or as JSON (`--format json`: every finding, one per task)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from rich.text import Text

from tau_mcp.harness.domain_check.findings import Finding, Report, Severity

#: How many task ids a grouped row names before saying how many more.
SHOWN_IDS = 6


@dataclass
class Row:
    """Findings that say the same thing of the same tool in several tasks share one row."""

    first: Finding
    tasks: list[str] = field(default_factory=list)

    @property
    def subject(self) -> str:
        if len(self.tasks) <= 1:
            return self.first.subject
        shown = ", ".join(self.tasks[:SHOWN_IDS])
        more = f", +{len(self.tasks) - SHOWN_IDS} more" if len(self.tasks) > SHOWN_IDS else ""
        tool = f" · {self.first.tool}" if self.first.tool else ""
        return f"{len(self.tasks)} tasks: {shown}{more}{tool}"


def rows(report: Report) -> list[Row]:
    grouped: dict[tuple, Row] = {}
    for finding in report.sorted_findings():
        key = (finding.severity, finding.check, finding.tool, finding.message)
        if finding.task is None:
            key += (id(finding),)  # a finding about the domain or a tool stands alone
        row = grouped.setdefault(key, Row(finding))
        if finding.task is not None:
            row.tasks.append(finding.task)
    return list(grouped.values())


def print_table(report: Report, console: Console) -> None:
    found = rows(report)
    if found:
        table = Table(title=Text(f"domain check: {report.domain}"), expand=False)
        table.add_column("severity", no_wrap=True)
        table.add_column("check", no_wrap=True)
        table.add_column("task/tool", overflow="fold", max_width=44)
        table.add_column("finding", overflow="fold")
        for row in found:
            style = "red" if row.first.severity is Severity.ERROR else "yellow"
            table.add_row(
                Text(row.first.severity.value, style=style),
                Text(row.first.check),
                Text(row.subject),  # task ids may hold brackets: text, never markup
                Text(row.first.message),
            )
        console.print(table)
    console.print(summary(report), markup=False, highlight=False)


def summary(report: Report) -> str:
    counts = ", ".join(f"{n} {what}" for what, n in report.counts.items())
    timings = ", ".join(f"{stage} {seconds:.2f}s" for stage, seconds in report.timings.items())
    verdict = "passed" if report.ok else "FAILED"
    config = f" (retrieval config {report.variant})" if report.variant else ""
    lines = [
        f"{report.domain}{config}: {verdict}: {len(report.errors)} error(s), "
        f"{len(report.warnings)} warning(s)",
        f"checked: {counts or 'nothing'}",
        f"time: {timings} (total {sum(report.timings.values()):.2f}s)",
    ]
    lines += [f"skipped {stage}: {why}" for stage, why in report.skipped.items()]
    return "\n".join(lines)


def as_json(report: Report) -> str:
    return json.dumps(report.as_json(), indent=2)
