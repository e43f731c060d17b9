"""`tau-server`: serve the domains over HTTP, run one episode over stdio, or print client config."""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tau_mcp.servers.auth import TOKEN_ENV, token_from_env
from tau_mcp.servers.cli_help import PlainFlagsGroup
from tau_mcp.servers.engine.data import ENV_VAR as DATA_ENV
from tau_mcp.servers.engine.data import resolve_data_dir
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import DataError, DomainPackError, EngineError
from tau_mcp.servers.guards import LOOPBACK_HOSTS
from tau_mcp.servers.http_options import (
    DEFAULTS,
    AllowHostOpt,
    AllowOriginOpt,
    BodyTimeoutOpt,
    HeaderTimeoutOpt,
    KeepAliveOpt,
    MaxBodyOpt,
    MaxConnectionsOpt,
    TokenFileOpt,
    secret_option,
)

if TYPE_CHECKING:
    from tau_mcp.servers.engine.faults import FaultPlan

app = typer.Typer(
    cls=PlainFlagsGroup,
    help="tau2 customer-service domains as MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # a crash report must not print the --token
)
config_app = typer.Typer(
    cls=PlainFlagsGroup, help="Print configuration snippets for MCP clients.", no_args_is_help=True
)
app.add_typer(config_app, name="config")


def _print_version(value: bool) -> None:
    if value:
        from tau_mcp.servers.version import package_version

        typer.echo(f"tau-server {package_version()}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """tau2 customer-service domains as MCP servers."""


log = logging.getLogger("tau.server")

DomainsOpt = Annotated[
    str | None,
    typer.Option(
        "--domains",
        help="Comma-separated domains to serve (default: every domain in the data folder).",
    ),
]
DataDirOpt = Annotated[
    str | None,
    typer.Option("--data-dir", help=f"Data folder in the reference layout (default: ${DATA_ENV})."),
]
SideOpt = Annotated[str, typer.Option("--side", help="Which tools to expose: agent or user.")]
DomainPathOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--domain-path",
        metavar="DIR",
        exists=True,
        file_okay=False,
        help="A domain pack's folder, or a folder of packs, to find domains in (repeatable; "
        "also $TAU_DOMAIN_PATH). Installed packs need none.",
    ),
]


def use_domain_paths(paths: list[Path] | None) -> None:
    """`--domain-path`: the pack folders, ahead of $TAU_DOMAIN_PATH's (and for the processes
    this one starts)."""
    if paths:
        from tau_mcp.servers.domains.registry import add_domain_paths

        add_domain_paths(paths)


RetrievalConfigOpt = Annotated[
    str | None,
    typer.Option(
        "--retrieval-config",
        help="For a domain with retrieval configs: the config of episodes that name none "
        "(default: the domain's own; `tau-harness domain NAME` lists its configs).",
    ),
]
RetrievalKwargsOpt = Annotated[
    str | None,
    typer.Option(
        "--retrieval-config-kwargs",
        help="JSON options of the retrieval config, e.g. '{\"top_k\": 5}' (top_k, grep_top_k, "
        "case_sensitive, reranker_min_score).",
    ),
]


FaultsOpt = Annotated[
    str | None,
    typer.Option(
        "--faults",
        help="Inject seeded faults into the agent's tool calls of episodes that name none, "
        "kind=rate pairs such as transient=0.1,rate_limit=0.05 (docs/faults.md).",
    ),
]
FaultsProfileOpt = Annotated[
    str | None,
    typer.Option(
        "--faults-profile",
        help="A named fault plan (flaky, retryable, degraded, outage, chaos) or a .toml file; "
        "--faults is laid over it.",
    ),
]


def server_faults(spec: str | None, profile: str | None) -> FaultPlan | None:
    """The fault plan of `--faults` over `--faults-profile` (None: none); one sentence when
    it cannot be read."""
    from tau_mcp.servers.engine.fault_profiles import resolve_faults

    return resolve_faults(spec, profile)


def check_retrieval_config(
    domains: dict[str, Domain], config: str | None, kwargs_text: str | None
) -> dict | None:
    """The parsed kwargs, once every served domain with retrieval configs accepts the config
    (one sentence otherwise)."""
    from tau_mcp.servers.engine.variants import VariantError, parse_kwargs

    kwargs = parse_kwargs(kwargs_text)
    if config is None and kwargs is None:
        return None
    with_configs = [d for d in domains.values() if d.variants is not None]
    if not with_configs:
        raise VariantError(
            "--retrieval-config applies to domains with retrieval configs, and none is served "
            f"here ({', '.join(domains)})"
        )
    for domain in with_configs:
        domain.resolve_variant(config, kwargs)
    return kwargs


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


#: A server that cannot listen (port in use or out of range, host unknown) exits 1, as
#: `tau-harness serve` does: it is the machine's state, not a misused command line.
CANNOT_LISTEN = 1


def _check_side(side: str) -> str:
    if side not in ("agent", "user"):
        _fail(f"--side must be 'agent' or 'user', not '{side}'")
    return side


def serving_domains(names: str | None, data_dir: str | None) -> dict[str, Domain]:
    """The domains to serve. Named domains must all load; by default every domain whose data
    is found is served, tau-mcp's and the packs' alike, and a pack that is refused or fails to
    load is skipped with a warning."""
    from tau_mcp.servers.domains import registry

    if names:
        wanted = [n.strip() for n in names.split(",") if n.strip()]
        for name in wanted:
            for refused in registry.refusals(name):
                log.warning("%s", refused)
        return registry.load_domains(wanted, data_dir)
    folder = resolve_data_dir(data_dir)
    for problem in registry.problems():
        log.warning("%s", problem)
    domains: dict[str, Domain] = {}
    for name in registry.domain_names():
        try:
            spec = registry.domain_spec(name)
            if spec.folder(folder).is_dir():
                domains[name] = Domain(spec, folder)
        except DomainPackError as exc:
            log.warning("skipping domain %s: %s", name, exc)
        except DataError:
            continue  # its data is elsewhere and not set up here (an unset variable)
        except Exception as exc:  # noqa: BLE001 - one broken domain must not stop the others
            log.warning("skipping domain %s: %s: %s", name, type(exc).__name__, exc)
    if not domains:
        raise EngineError(f"no domain found in {folder / 'tau2' / 'domains'}")
    return domains


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="Interface to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port.")] = 8000,
    domains: DomainsOpt = None,
    data_dir: DataDirOpt = None,
    token: Annotated[
        str | None,
        typer.Option(
            help=f"Require 'Authorization: Bearer TOKEN' on every request (or ${TOKEN_ENV}, or "
            "--token-file)."
        ),
    ] = None,
    token_file: TokenFileOpt = None,
    max_body: MaxBodyOpt = DEFAULTS["max_body"],
    capacity: Annotated[
        int, typer.Option(help="Episodes kept in memory before the oldest are evicted.")
    ] = 20_000,
    log_level: Annotated[str, typer.Option(help="Log level for the server.")] = "warning",
    allow_host: AllowHostOpt = None,
    allow_origin: AllowOriginOpt = None,
    keep_alive: KeepAliveOpt = DEFAULTS["keep_alive"],
    header_timeout: HeaderTimeoutOpt = DEFAULTS["header_timeout"],
    body_timeout: BodyTimeoutOpt = DEFAULTS["body_timeout"],
    max_connections: MaxConnectionsOpt = DEFAULTS["max_connections"],
    retrieval_config: RetrievalConfigOpt = None,
    retrieval_config_kwargs: RetrievalKwargsOpt = None,
    faults: FaultsOpt = None,
    faults_profile: FaultsProfileOpt = None,
    domain_path: DomainPathOpt = None,
    workers: Annotated[
        str,
        typer.Option(
            "--workers",
            help="Server processes behind the one address (a number, or 'auto': one per CPU); "
            "each episode lives in one of them and all its requests go there.",
        ),
    ] = "1",
) -> None:
    """Serve the domains' episodes and MCP endpoints over HTTP."""
    use_domain_paths(domain_path)
    from tau_mcp.servers.app import ServerSettings, TauServer
    from tau_mcp.servers.http_options import http_settings
    from tau_mcp.servers.http_server import BindError, bind_socket
    from tau_mcp.servers.http_server import run as run_http
    from tau_mcp.servers.workers import parse_workers

    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    try:
        guards, policy = http_settings(
            host,
            secret_option(token, token_file, option="--token", env=TOKEN_ENV),
            allow_host,
            allow_origin,
            max_body,
            keep_alive,
            header_timeout,
            body_timeout,
            max_connections,
        )
        processes = parse_workers(workers)
    except ValueError as exc:
        _fail(str(exc))
        return
    try:
        sock = bind_socket(host, port, policy.backlog)  # a port in use is one sentence, first
    except BindError as exc:
        _fail(str(exc), CANNOT_LISTEN)
        return
    try:
        loaded = serving_domains(domains, data_dir)
        for domain in loaded.values():
            domain.warm()  # bad data fails here, with one sentence, not in uvicorn's startup
        retrieval_kwargs = check_retrieval_config(loaded, retrieval_config, retrieval_config_kwargs)
        settings = ServerSettings(
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval_kwargs,
            faults=server_faults(faults, faults_profile),
            token=guards.token,
            max_body_bytes=guards.max_body_bytes,
            capacity=capacity,
            allowed_hosts=guards.allowed_hosts,
            allowed_origins=guards.allowed_origins,
            body_timeout=guards.body_timeout,
        )
        asgi = TauServer(loaded, settings).build()
    except EngineError as exc:
        sock.close()
        _fail(str(exc))
        return
    if host not in LOOPBACK_HOSTS and not settings.token:
        log.warning(
            "binding %s without a token: anyone who can reach this port can use the server", host
        )
    bound_port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    banner = serve_banner(list(loaded), f"http://{shown}:{bound_port}")
    if processes > 1:
        banner += f"\n  {processes} worker processes; GET /health reports each"
    typer.echo(banner, err=True)
    # SIGINT and SIGTERM alike: stop, then exit 0 through the normal exit, which removes the
    # knowledge-base files (and every episode's writable copy) with the process's folders.
    if processes > 1:
        stopped = _serve_workers(processes, sock, loaded, settings, policy, log_level)
    else:
        stopped = run_http(asgi, sock, policy, log_level)
    if stopped:
        typer.echo(f"tau-server: stopped by {stopped}", err=True)


def _serve_workers(
    count: int, sock, loaded: dict[str, Domain], settings, policy, log_level: str
) -> str | None:
    """`--workers N`: the front and N workers (servers/workers.py), each worker building its
    own app with its place among them and its share of `--capacity`."""
    from dataclasses import replace

    from tau_mcp.servers.app import TauServer
    from tau_mcp.servers.workers import per_worker_capacity, serve_workers

    share = per_worker_capacity(settings.capacity, count)

    def build(index: int):
        worker = replace(settings, worker=(index, count), capacity=share)
        return TauServer(loaded, worker).build()

    return serve_workers(
        count,
        sock,
        build,
        policy,
        capacity=share,
        max_body=settings.max_body_bytes,
        body_timeout=settings.body_timeout,
        log_level=log_level,
    )


def serve_banner(domains: list[str], base: str) -> str:
    """What `serve` says once it listens: where, and the MCP endpoints to point a client at."""
    lines = [f"tau-server: {', '.join(domains)} on {base}", "  MCP, each domain's default episode:"]
    width = max(len(name) for name in domains)
    for name in domains:
        lines.append(f"    {name:<{width}}  {base}/{name}/agent/mcp  {base}/{name}/user/mcp")
    lines.append("  MCP, an episode of its own: POST /{domain}/episodes, then")
    lines.append("    /{domain}/episodes/{id}/agent/mcp  /{domain}/episodes/{id}/user/mcp")
    return "\n".join(lines)


@app.command()
def stdio(
    domain: Annotated[str, typer.Option("--domain", help="Domain to serve.")],
    side: SideOpt = "agent",
    task_id: Annotated[
        str | None, typer.Option("--task-id", help="Start from this task's initial state.")
    ] = None,
    data_dir: DataDirOpt = None,
    retrieval_config: RetrievalConfigOpt = None,
    retrieval_config_kwargs: RetrievalKwargsOpt = None,
    faults: FaultsOpt = None,
    faults_profile: FaultsProfileOpt = None,
    domain_path: DomainPathOpt = None,
) -> None:
    """Serve one episode over stdio (stdout carries only JSON-RPC)."""
    use_domain_paths(domain_path)
    from tau_mcp.servers.engine.variants import parse_kwargs
    from tau_mcp.servers.stdio import run_stdio

    _check_side(side)
    # SIGTERM as SIGINT: either ends the episode with a normal exit (code 0), which removes the
    # process's knowledge-base files; uncaught, SIGTERM would end the process before that.
    # SIGTERM raises SIGINT, whose handler, once serving, is the event loop runner's: it
    # cancels the serving task. (Raising KeyboardInterrupt straight from SIGTERM could land
    # inside anyio's cancel-scope bookkeeping, and the process then ended with a traceback.)
    signal.signal(signal.SIGTERM, _raise_sigint)
    try:
        kwargs = parse_kwargs(retrieval_config_kwargs)
        run_stdio(
            domain,
            side,  # type: ignore[arg-type]
            task_id=task_id,
            data_dir=data_dir,
            retrieval_config=retrieval_config,
            retrieval_kwargs=kwargs,
            faults=server_faults(faults, faults_profile),
        )
    except EngineError as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        return


def _raise_sigint(signum: int, frame: object) -> None:
    signal.raise_signal(signal.SIGINT)


@app.command(
    "ep-serve",
    context_settings={
        "allow_extra_args": True,
        "ignore_unknown_options": True,
        "help_option_names": [],
    },
)
def ep_serve(ctx: typer.Context) -> None:
    """Serve one domain as Eval Protocol's tau2 benchmarks expect (/mcp, /control/*); --help for options."""
    from tau_mcp.servers.integrations.ep_stock import main as serve

    raise typer.Exit(serve(ctx.args))


def _mcp_url(http: str, domain: str, side: str) -> str:
    url = http.rstrip("/")
    return url if url.endswith("/mcp") else f"{url}/{domain}/{side}/mcp"


def _entry_name(domain: str, side: str) -> str:
    """The MCP server's name as its endpoints give it (`tau2-airline-agent`)."""
    from tau_mcp.servers.domains.registry import domain_spec

    try:
        spec = domain_spec(domain)
    except EngineError:
        return f"tau2-{domain}-{side}"
    return f"tau2-{domain}-{side}" if spec.benchmark == "tau2" else f"{domain}-{side}"


def claude_config(
    domain: str,
    side: str = "agent",
    http: str | None = None,
    task_id: str | None = None,
    data_dir: str | None = None,
    token: str | None = None,
    domain_paths: list[Path] | None = None,
) -> tuple[str, dict, list[str]]:
    """(server name, mcpServers entry, `claude mcp add` argv) for one domain side; a stdio
    server is launched with the pack folders given (`--domain-path`), by their full paths."""
    name = _entry_name(domain, side)
    if http:
        url = _mcp_url(http, domain, side)
        entry: dict = {"type": "http", "url": url}
        command = ["claude", "mcp", "add", "--transport", "http", name, url]
        if token:
            entry["headers"] = {"Authorization": f"Bearer {token}"}
            command[5:5] = ["--header", f"Authorization: Bearer {token}"]
        return name, entry, command
    args = ["stdio", "--domain", domain, "--side", side]
    if task_id:
        args += ["--task-id", task_id]
    folder = data_dir or os.environ.get(DATA_ENV)
    if folder:
        args += ["--data-dir", str(Path(folder).expanduser().resolve())]
    for path in domain_paths or ():
        args += ["--domain-path", str(Path(path).expanduser().resolve())]
    # Desktop apps do not inherit the shell's PATH: name the executable by its full path.
    executable = shutil.which("tau-server") or "tau-server"
    return (
        name,
        {"command": executable, "args": args},
        ["claude", "mcp", "add", name, "--", executable, *args],
    )


@config_app.command("claude")
def config_claude(
    domain: Annotated[str, typer.Option("--domain", help="Domain to expose.")],
    side: SideOpt = "agent",
    http: Annotated[
        str | None,
        typer.Option(
            "--http",
            help="Use a running server: its root URL (http://127.0.0.1:8000) or a full MCP URL.",
        ),
    ] = None,
    stdio_: Annotated[
        bool, typer.Option("--stdio", help="Launch a stdio server per client (the default).")
    ] = False,
    task_id: Annotated[
        str | None, typer.Option("--task-id", help="stdio only: start from this task.")
    ] = None,
    data_dir: DataDirOpt = None,
    token: Annotated[
        str | None, typer.Option(help="Bearer token of the HTTP server (or $TAU_SERVER_TOKEN).")
    ] = None,
    json_only: Annotated[
        bool, typer.Option("--json-only", help="Print only the JSON snippet.")
    ] = False,
    domain_path: DomainPathOpt = None,
) -> None:
    """Print the `mcpServers` entry for Claude Desktop / Claude Code, and the `claude mcp add` line."""
    _check_side(side)
    if http and stdio_:
        _fail("choose either --http URL or --stdio")
    name, entry, command = claude_config(
        domain,
        side,
        http,
        task_id,
        data_dir,
        token_from_env(token) if http else None,
        None if http else domain_path,
    )
    typer.echo(json.dumps({"mcpServers": {name: entry}}, indent=2))
    if not json_only:
        typer.echo("\n# Claude Code:\n" + shlex.join(command))


@app.command("lb-config")
def lb_config(
    server: Annotated[
        list[str],
        typer.Option("--server", help="A tau-server node, HOST:PORT (repeatable; at least one)."),
    ],
    bind: Annotated[
        str, typer.Option(help="The address HAProxy listens on, HOST:PORT.")
    ] = "127.0.0.1:8080",
    max_connections: Annotated[
        int,
        typer.Option(
            "--max-connections",
            help="HAProxy's connection cap (it needs two file descriptors per connection).",
        ),
    ] = 4096,
) -> None:
    """Print an HAProxy configuration that puts tau-server nodes behind one address, each
    episode's requests on the node that holds it (docs/scaling.md)."""
    from tau_mcp.servers.lb_config import haproxy_config

    try:
        typer.echo(haproxy_config(server, bind, max_connections=max_connections), nl=False)
    except ValueError as exc:
        _fail(str(exc))


@config_app.command("eval-protocol")
def config_eval_protocol() -> None:
    """Print the server script to give Eval Protocol's tau2 benchmarks (server_script_path)."""
    from tau_mcp.servers.integrations.ep_stock import config_text

    typer.echo(config_text())


def main() -> None:  # pragma: no cover - console entry alias
    app()
