"""Bridges to other evaluation frameworks: Eval Protocol dataset rows, Inspect tasks."""
