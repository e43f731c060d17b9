"""What a domain pack imports: everything a domain is written with, under one stable name.

    from tau_mcp.domain import DataLocation, DomainSpec, ToolKind, Toolkit, assertion, tool

A pack declares its `DomainSpec` in its pyproject.toml's entry-point group `tau_mcp.domains`
(`NAME = "module:SPEC"`); tau-mcp's own domains are written and declared the same way
(docs/own-domain.md, docs/engine.md).
"""

from __future__ import annotations

from tau_mcp.servers.engine.data import DataLocation
from tau_mcp.servers.engine.domain import DomainSpec
from tau_mcp.servers.engine.toolkit import ToolKind, Toolkit, assertion, tool

__all__ = ["DataLocation", "DomainSpec", "ToolKind", "Toolkit", "assertion", "tool"]
