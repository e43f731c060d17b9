"""Graded simulations for outside agents: the harness plays the customer and grades, and the
agent (Claude Code, Claude Desktop, any MCP client or program) reaches the episode through one
MCP endpoint per simulation. `tau-harness serve` hosts it; `tau-harness run --agent cmd` drives an
agent program through it.

Modules: `channel` (one agent move at a time between the endpoint and the orchestrator),
`simulation` (one simulation's life, many of them, the runner that hosts them), `endpoint` (the
MCP server), `app` (HTTP routes), `command` (agent programs run per simulation).
"""
