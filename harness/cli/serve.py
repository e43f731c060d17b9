"""`tau-harness serve`: host graded simulations for outside agents (`tau_mcp.harness.serve`)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

import typer

from tau_mcp.harness import redaction
from tau_mcp.harness.cli.common import (
    DOMAIN_HELP,
    RETRIEVAL_HELP,
    RETRIEVAL_KWARGS_HELP,
    TASK_SET_HELP,
    fail,
    json_arg,
    load_domain,
    open_backend,
    retrieval_kwargs_option,
)
from tau_mcp.harness.config import DEFAULT_SEED
from tau_mcp.harness.orchestrator import DEFAULT_MAX_ERRORS, DEFAULT_MAX_STEPS
from tau_mcp.harness.preflight import check_models, models_called
from tau_mcp.harness.results.lock import results_lock
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
)

TOKEN_ENV = "TAU_HARNESS_TOKEN"
log = logging.getLogger("tau.harness.serve")


def serve(
    domain: str = typer.Option(..., "--domain", help=DOMAIN_HELP),
    user: str = typer.Option("llm", help="The simulated customer: llm or scripted."),
    user_llm: str = typer.Option(
        None, "--user-llm", help="litellm model name for the user simulator."
    ),
    user_llm_args: str = typer.Option(
        None, "--user-llm-args", help="JSON arguments for the user's model."
    ),
    server: str = typer.Option(
        None, "--server", help="URL of a running tau-server (default: in-process)."
    ),
    server_token: str = typer.Option(
        None, "--server-token", envvar="TAU_SERVER_TOKEN", help="Bearer token of --server."
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to bind (loopback)."),
    port: int = typer.Option(8100, "--port", help="TCP port."),
    token: str = typer.Option(
        None,
        "--token",
        envvar=TOKEN_ENV,
        help=f"Require 'Authorization: Bearer TOKEN' on every request (or ${TOKEN_ENV}).",
    ),
    save_to: Path = typer.Option(
        None, "--save-to", help="Results file finished simulations are appended to (resumable)."
    ),
    data_dir: Path = typer.Option(
        None, "--data-dir", help="Benchmark data folder (default $TAU2_DATA_DIR)."
    ),
    seed: int = typer.Option(DEFAULT_SEED, "--seed", help="Seeds trials as `run` does."),
    max_steps: int = typer.Option(DEFAULT_MAX_STEPS, "--max-steps", min=1),
    max_errors: int = typer.Option(DEFAULT_MAX_ERRORS, "--max-errors", min=1),
    judge_llm: str = typer.Option(
        None, "--judge-llm", help="Model judging NL assertions (default as in run; 'none' skips)."
    ),
    judge_llm_args: str = typer.Option(
        None, "--judge-llm-args", help="JSON arguments for the judge's model."
    ),
    log_level: str = typer.Option("warning", "--log-level"),
    allow_host: AllowHostOpt = None,
    allow_origin: AllowOriginOpt = None,
    max_body: MaxBodyOpt = DEFAULTS["max_body"],
    keep_alive: KeepAliveOpt = DEFAULTS["keep_alive"],
    header_timeout: HeaderTimeoutOpt = DEFAULTS["header_timeout"],
    body_timeout: BodyTimeoutOpt = DEFAULTS["body_timeout"],
    max_connections: MaxConnectionsOpt = DEFAULTS["max_connections"],
    retrieval_config: str = typer.Option(None, "--retrieval-config", help=RETRIEVAL_HELP),
    retrieval_kwargs: str = typer.Option(
        None, "--retrieval-config-kwargs", help=RETRIEVAL_KWARGS_HELP
    ),
    task_set_name: str = typer.Option(None, "--task-set-name", help=TASK_SET_HELP),
) -> None:
    """Host graded simulations that an outside MCP agent (Claude, any client) plays."""
    from tau_mcp.conversation.llm import DEFAULT_LLM
    from tau_mcp.harness.backends import InfrastructureError
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.harness.errors import ConfigError
    from tau_mcp.harness.results import ResultsError
    from tau_mcp.servers.engine.errors import EngineError
    from tau_mcp.servers.http_options import http_settings
    from tau_mcp.servers.http_server import BindError, bind_socket, uvicorn_server

    logging.basicConfig(
        stream=sys.stderr, level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s"
    )
    if user not in ("llm", "scripted"):
        fail(f"unknown user '{user}' for serve (use llm or scripted)")
    try:
        config = RunConfig(
            domain=domain,
            data_dir=data_dir,
            task_set_name=task_set_name,
            agent="mcp",
            user=user,
            user_llm=user_llm,
            user_llm_args=json_arg("--user-llm-args", user_llm_args),
            seed=seed,
            max_steps=max_steps,
            max_errors=max_errors,
            judge_llm=judge_llm or DEFAULT_LLM,
            judge_llm_args=json_arg("--judge-llm-args", judge_llm_args),
            save_to=save_to,
            retrieval_config=retrieval_config,
            retrieval_kwargs=retrieval_kwargs_option(retrieval_kwargs),
            server=server,
            server_token=server_token,
        )
    except ConfigError as exc:
        fail(str(exc))
    redaction.remember(token, server_token)
    try:
        guards, policy = http_settings(
            host,
            token,
            allow_host,
            allow_origin,
            max_body,
            keep_alive,
            header_timeout,
            body_timeout,
            max_connections,
        )
    except ValueError as exc:
        fail(str(exc))
    if host not in LOOPBACK_HOSTS and not token:
        log.warning("binding %s without a token: anyone who can reach this port can play", host)

    async def main() -> None:
        from tau_mcp.harness.serve.app import create_serve_app
        from tau_mcp.harness.serve.simulation import make_hub
        from tau_mcp.servers.http_server import graceful_stop

        loaded = load_domain(
            domain, config.data_dir, task_set=config.task_set_name, domain_paths=config.domain_paths
        )
        sock = bind_socket(host, port, policy.backlog)
        try:
            backend = await open_backend(loaded, config.server, config.server_token)
        except BaseException:
            sock.close()
            raise
        try:
            hub = make_hub(backend, loaded, config, save_to)
            # A missing API key for the user or judge model is one sentence now, not at the
            # first simulation.
            runner = hub.runner
            check_models(
                models_called(runner.config, list(loaded.tasks.values()), runner.grader.judge)
            )
            http = uvicorn_server(
                create_serve_app(hub, guards),
                policy,
                log_level,
                handle_signals=False,
                graceful_timeout=2,
            )
            # uvicorn has set up its loggers now: no log line may print a key
            redaction.redact_logging("uvicorn", "uvicorn.error", "uvicorn.access")
            typer.echo(
                f"tau-harness serve: {domain} simulations on http://{host}:{port} "
                f"(POST /simulations)",
                err=True,
            )
            with graceful_stop(http) as received:
                try:
                    await http.serve(sockets=[sock])
                finally:
                    sock.close()
                    # open simulations are recorded (infrastructure errors), the file written
                    await hub.close()
                    if received:
                        stopped = ", ".join(signal.Signals(n).name for n in received[:1])
                        typer.echo(f"tau-harness serve: stopped by {stopped}", err=True)
                    if save_to is not None:
                        typer.echo(f"results saved to {save_to}", err=True)
        finally:
            await backend.close()

    try:
        with results_lock(save_to):  # one writer per results file, as for `run`
            asyncio.run(main())
    except (ConfigError, EngineError, InfrastructureError, ResultsError, ValueError) as exc:
        fail(str(exc))
    except BindError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot serve on {host}:{port} ({exc.strerror or exc})")
