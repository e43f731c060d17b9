"""The installed tau-mcp version, reported by `--version` and as the MCP `serverInfo.version`."""

from __future__ import annotations

from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "tau-mcp"


@lru_cache(maxsize=1)
def package_version() -> str:
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"
