#!/usr/bin/env python3
"""Drop-in replacement for Eval Protocol's bundled tau2 server script.

In an EP benchmark, change one line:

    server_script_path=get_server_script_path()   ->   server_script_path="<this file>"

(`tau-server config eval-protocol` prints this file's path.) EP runs it as
`python <this file> --port 9700 --domain airline`. EP's own environment cannot hold tau-mcp
(it pins mcp<2), so this script uses only the standard library and hands over to tau-mcp's
interpreter: $TAU_MCP_PYTHON if set, else the running interpreter when it has tau-mcp, else
`tau-server` found on PATH.

EP's vendored tau2 code reads $TAU2_DATA_DIR too, in a layout of its own, so an EP process
usually cannot set it for us: name tau-mcp's data folder in $TAU_MCP_DATA_DIR instead (or let
it use the cache `tau-harness data fetch` fills).
"""

import os
import shutil
import sys


def _has_tau_mcp() -> bool:
    try:
        from tau_mcp.servers.integrations import ep_stock  # noqa: F401
    except Exception:  # noqa: BLE001 - any failure means "not this interpreter"
        return False
    return True


def main() -> None:
    args = sys.argv[1:]
    data = os.environ.get("TAU_MCP_DATA_DIR")
    if data:
        os.environ["TAU2_DATA_DIR"] = data  # for tau-mcp only: this process runs nothing else
    explicit = os.environ.get("TAU_MCP_PYTHON")
    if explicit:
        os.execv(explicit, [explicit, "-m", "tau_mcp.servers.integrations.ep_stock", *args])
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0]) == here:
        sys.path.pop(0)  # run as a script: this folder's modules are not top-level modules
    if _has_tau_mcp():
        from tau_mcp.servers.integrations.ep_stock import main as serve

        sys.exit(serve(args))
    tau_server = shutil.which("tau-server")
    if tau_server:
        os.execv(tau_server, [tau_server, "ep-serve", *args])
    sys.exit(
        "error: tau-mcp not found: set TAU_MCP_PYTHON to the Python that has tau-mcp installed, "
        "or put its `tau-server` on PATH"
    )


if __name__ == "__main__":
    main()
