"""The MCP protocol revisions tau-mcp speaks, and the `_meta` keys of the sessionless one.

One place for the strings a server and a client must agree on: the short path that answers
sessionless calls (`tau_mcp.servers.fast_calls`), the surface probes (`tau_mcp.servers.mcp_probe`)
and the harness's lean client (`tau_mcp.harness.backends.mcp_wire`). Nothing is imported here,
so the lean client pays nothing for it.
"""

from __future__ import annotations

#: The sessionless revision: every request carries its version, client info and capabilities in
#: `_meta` and its method (and tool name) in headers; no handshake, no session.
MODERN_VERSION = "2026-07-28"
#: The handshake revision (`initialize`, then `Mcp-Session-Id`), as Eval Protocol connects.
LEGACY_VERSION = "2025-06-18"

VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"
