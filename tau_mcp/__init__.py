"""tau-mcp: the tau2-bench customer-service benchmark as MCP servers and an evaluation harness.

One import namespace for everything tau-mcp installs. The repository keeps its design folders at
the top (`servers/`, `conversation/`, `grading/`, `simulator/`, `harness/`, `data/`); the packaging
maps each under this package (`tau_mcp.servers`, ..., `tau_mcp.data`), so nothing of ours is a
bare top-level name. See docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tau_mcp.harness.api import run
    from tau_mcp.harness.config import RunConfig

__all__ = ["RunConfig", "run"]

#: Run API names, loaded on first use: `import tau_mcp` stays cheap (tests/test_harness_startup.py).
_LAZY = {"run": "tau_mcp.harness.api", "RunConfig": "tau_mcp.harness.config"}


def __getattr__(name: str) -> Any:
    """`tau_mcp.run(config)` runs a `tau_mcp.RunConfig` (see tau_mcp.harness.api)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tau_mcp' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
