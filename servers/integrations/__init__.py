"""Adapters that let other evaluation frameworks drive the servers unchanged (Eval Protocol)."""
