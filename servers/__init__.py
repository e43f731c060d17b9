"""tau-mcp servers: domain engines, episode store and the MCP/HTTP layer."""
