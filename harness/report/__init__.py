"""Showing results to people: the console summary and conversation views."""

from harness.report.console import print_conversation, print_summary, simulations_table

__all__ = ["print_conversation", "print_summary", "simulations_table"]
