"""tau-mcp: the tau2-bench customer-service benchmark as MCP servers and an evaluation harness.

One import namespace for everything tau-mcp installs. The repository keeps its design folders at
the top (`servers/`, `conversation/`, `grading/`, `simulator/`, `harness/`, `data/`); the packaging
maps each under this package (`tau_mcp.servers`, ..., `tau_mcp.data`), so nothing of ours is a
bare top-level name. See docs/architecture.md.
"""
