"""tau-harness: runs tau2 simulations against the tau-mcp servers over MCP and grades them."""
