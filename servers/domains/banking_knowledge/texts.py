"""Output shapes shared by several banking tools."""

from __future__ import annotations

import json
from typing import Any

from tau_mcp.servers.domains.banking_knowledge import records


def title(code: str) -> str:
    """A snake_case code as words: 'fraud_suspected' -> 'Fraud Suspected'."""
    return code.replace("_", " ").title()


def shown_arguments(arguments: dict[str, Any]) -> str:
    return json.dumps(arguments, indent=2)


def history(summary: str, tool_name: str, heading: str, found: str, none: str) -> str:
    """A lookup's report: what was done, then the records found or the `none` line."""
    parts = [summary, "", f"Executed: {tool_name}", heading]
    parts.append(found if records.found_any(found) else none)
    return "\n".join(parts)


def missing(parameter: str) -> str:
    return f"Error: Missing required parameter: {parameter}"
