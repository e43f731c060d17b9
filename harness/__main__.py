"""`python -m harness ...` is `tau-harness ...`."""

from tau_mcp.harness.cli import main

main()
