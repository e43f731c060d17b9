"""Eval Protocol's stock tau2 benchmarks, served by tau-mcp.

EP's `MCPGymRolloutProcessor` starts its server as `python SCRIPT --port P --domain D`, waits
for the port to accept connections, then speaks MCP at `http://localhost:P/mcp/` and reads
`/control/reward`, `/control/status` and `/control/reset_session` next to it. This module serves
one domain that way: the full tau-server app, with `/mcp` and `/control/*` mapped onto the
domain's Eval Protocol routes (`/{domain}/mcp`, `/{domain}/control/*`). Every other route
(`/health`, `/{domain}/episodes/...`) stays where it is.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from starlette.types import ASGIApp, Receive, Scope, Send

from tau_mcp.servers.domains.discovery import PATH_ENV
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.surfaces import ShownTool, View, register_surface

EP_DEFAULT_PORT = 8000  # what EP's own server script defaults to without --port or $PORT


class OneDomainPaths:
    """Maps EP's root-level paths onto one domain's routes of the multi-domain app."""

    def __init__(self, app: ASGIApp, domain: str) -> None:
        self.app = app
        self.prefix = f"/{domain}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if path in ("/mcp", "/mcp/") or path.startswith("/control/"):
                new_path = self.prefix + path
                scope = {**scope, "path": new_path, "raw_path": new_path.encode()}
        await self.app(scope, receive, send)


async def _shown_by_stock_script(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool]:
    """`tools/list` at `/mcp/` of the app this script serves, as EP's client connects, to a
    session whose row config names the retrieval config `variant`."""
    from tau_mcp.servers.engine.variants import NAME_OPTION
    from tau_mcp.servers.mcp_probe import PROBE_HOST, listed_tools_as_ep, running

    app = build_app(domain.name, str(domain.data_dir), allow_hosts=(PROBE_HOST,))
    async with running(app.app):
        return await listed_tools_as_ep(app, "/mcp/", {NAME_OPTION: variant})


#: `tau-server ep-serve` and the stock script: the Eval Protocol endpoint at `/mcp`.
EP_STOCK = register_surface(
    "tau-server ep-serve /mcp (Eval Protocol stock script)", ("agent",), _shown_by_stock_script
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tau-server ep-serve",
        description=(
            "Serve one tau2 domain the way Eval Protocol's tau2 benchmarks expect: MCP at /mcp "
            "and the control plane at /control/*. Takes the arguments EP's own server script takes."
        ),
    )
    # EP's rollout processor always names the domain.
    parser.add_argument(
        "--domain", required=True, help="the domain to serve (`tau-harness domains` lists them)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("PORT") or EP_DEFAULT_PORT),
        help="TCP port (default: $PORT, else 8000)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (loopback)")
    parser.add_argument(
        "--transport",
        default="streamable-http",
        help="only streamable-http (EP's default) is served",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="accepted for EP compatibility; each session's row carries its own start state",
    )
    parser.add_argument(
        "--max-workers", type=int, default=None, help="accepted for EP compatibility; unused"
    )
    parser.add_argument("--data-dir", default=None, help="data folder (default: $TAU2_DATA_DIR)")
    parser.add_argument(
        "--domain-path",
        action="append",
        default=[],
        metavar="DIR",
        help="a domain pack's folder, or a folder of packs (repeatable; also $TAU_DOMAIN_PATH)",
    )
    parser.add_argument("--token", default=None, help="require 'Authorization: Bearer TOKEN'")
    parser.add_argument("--log-level", default="warning")
    return parser


def build_app(
    domain: str,
    data_dir: str | None = None,
    token: str | None = None,
    allow_hosts: tuple[str, ...] = (),
) -> OneDomainPaths:
    """The one-domain app; bad data or an unknown domain fails here with one sentence. It keeps
    the server's Host/Origin rules: loopback names, plus `allow_hosts`."""
    from tau_mcp.servers.app import ServerSettings, TauServer
    from tau_mcp.servers.auth import token_from_env
    from tau_mcp.servers.domains.registry import load_domains
    from tau_mcp.servers.guards import LOOPBACK_HOSTS

    domains = load_domains([domain], data_dir)
    domains[domain].warm()
    settings = ServerSettings(
        token=token_from_env(token), allowed_hosts=(*LOOPBACK_HOSTS, *allow_hosts)
    )
    return OneDomainPaths(TauServer(domains, settings).build(), domain)


def script_path() -> str:
    """The stdlib-only launcher EP's rollout processor can run (`server_script_path`)."""
    from pathlib import Path

    return str(Path(__file__).with_name("ep_server.py").resolve())


def config_text() -> str:
    """What `tau-server config eval-protocol` prints: the one line to change in an EP benchmark."""
    lines = [
        "# In an Eval Protocol tau2 benchmark (e.g. EP's test_tau_bench_airline.py), replace",
        "#     server_script_path=get_server_script_path(),",
        "# with",
        f'    server_script_path="{script_path()}",',
        "# and, if EP's `python` is not this environment's, tell the script where tau-mcp is:",
        f"export TAU_MCP_PYTHON={sys.executable}",
        "# A domain pack that is not installed: name its folder (the script passes it on)",
        f"export {PATH_ENV}=PACK_FOLDER",
        "# Rows that start each session from its task's initial state, graded by the server:",
        "tau-harness export ep-rows --domain NAME --split base -o NAME_rows.jsonl",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the server until stopped, with tau-server's connection policy; 2 with one sentence
    on stderr for bad input."""
    from pathlib import Path

    from tau_mcp.servers.domains.registry import add_domain_paths
    from tau_mcp.servers.engine.errors import EngineError
    from tau_mcp.servers.http_server import BindError, ConnectionPolicy, bind_socket, run

    args = build_parser().parse_args(argv)
    if args.transport != "streamable-http":
        print(
            f"error: transport '{args.transport}' is not served here; use streamable-http "
            "(or `tau-server stdio` for a stdio server)",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        for path in args.domain_path:
            if not Path(path).is_dir():
                raise EngineError(f"domain path {path} is not a folder")
        add_domain_paths(args.domain_path)
        app = build_app(args.domain, args.data_dir, args.token)
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        sock = bind_socket(args.host, args.port)
    except BindError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"tau-server (Eval Protocol layout): {args.domain} at http://{args.host}:{args.port}/mcp",
        file=sys.stderr,
        flush=True,
    )
    run(app, sock, ConnectionPolicy(), args.log_level)
    return 0


if __name__ == "__main__":
    sys.exit(main())
