"""Showing results to people: the console summary, conversation views, and `tau-harness report`
(HTML, Markdown, JSON) with confidence intervals and paired comparisons."""

from tau_mcp.harness.report.console import (
    print_conversation,
    print_grade,
    print_summary,
    simulations_table,
    task_rates_table,
)

__all__ = [
    "print_conversation",
    "print_grade",
    "print_summary",
    "simulations_table",
    "task_rates_table",
]
