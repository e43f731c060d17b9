"""Conversation primitives shared by the simulated user and the harness: trajectory messages,
model calls, the tool-session protocol both sides speak, and the gold-action plan.

Nothing here imports `tau_mcp.harness` or `tau_mcp.simulator`; both import from here, so dependencies run one way.
"""
