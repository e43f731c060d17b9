"""The command-line options of the HTTP toolkit, shared by `tau-server serve` and
`tau-harness serve` so both take the same flags with the same meaning and defaults."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tau_mcp.servers.auth import DEFAULT_MAX_BODY
from tau_mcp.servers.guards import DEFAULT_BODY_TIMEOUT, allowed_hosts_for
from tau_mcp.servers.http_server import (
    DEFAULT_HEADER_TIMEOUT,
    DEFAULT_KEEP_ALIVE,
    DEFAULT_MAX_CONNECTIONS,
    ConnectionPolicy,
)

if TYPE_CHECKING:
    from tau_mcp.servers.http_stack import HttpGuards

AllowHostOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-host",
        help="Also answer requests whose Host header names this host (repeatable; '*' for any). "
        "Loopback names and the bound address are always allowed.",
    ),
]
AllowOriginOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-origin",
        help="Let browser pages from this origin (e.g. http://localhost:6274) call the server "
        "(repeatable; '*' for any).",
    ),
]
MaxBodyOpt = Annotated[
    int, typer.Option("--max-body", help="Largest accepted request body, in bytes.")
]
KeepAliveOpt = Annotated[
    float, typer.Option("--keep-alive", help="Seconds an idle keep-alive connection stays open.")
]
HeaderTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--header-timeout", help="Seconds a connection has to send a complete request head."
    ),
]
BodyTimeoutOpt = Annotated[
    float, typer.Option("--body-timeout", help="Seconds a request has to send its whole body.")
]
MaxConnectionsOpt = Annotated[
    int,
    typer.Option("--max-connections", help="Open connections beyond this get 503 and are closed."),
]

TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file",
        help="Read the token from this file instead (a command line is visible to every local "
        "user in ps).",
    ),
]


def secret_option(
    given: str | None, file: Path | None, *, option: str, env: str | None = None
) -> str | None:
    """A secret an option carries (a bearer token): read from its file option (`OPTION-file`),
    else taken from the command line, else from the environment variable `env`. A command line
    is visible to every local user (`ps`), so a secret given there still works but prints one
    warning line on stderr saying how to keep it off. ValueError, one sentence, for both at once
    or a file that cannot be read."""
    if given and file is not None:
        raise ValueError(f"give either {option} or {option}-file, not both")
    if file is not None:
        try:
            value = Path(file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ValueError(f"cannot read {option}-file {file} ({reason})") from None
        if not value:
            raise ValueError(f"{option}-file {file} is empty")
        return value
    if given:
        instead = f"set ${env} or use {option}-file FILE" if env else f"use {option}-file FILE"
        typer.echo(
            f"warning: {option} on the command line is visible to every local user (ps); {instead}",
            err=True,
        )
        return given
    return (os.environ.get(env) or None) if env else None


DEFAULTS = {
    "max_body": DEFAULT_MAX_BODY,
    "keep_alive": DEFAULT_KEEP_ALIVE,
    "header_timeout": DEFAULT_HEADER_TIMEOUT,
    "body_timeout": DEFAULT_BODY_TIMEOUT,
    "max_connections": DEFAULT_MAX_CONNECTIONS,
}


def http_settings(
    host: str,
    token: str | None,
    allow_host: list[str] | None,
    allow_origin: list[str] | None,
    max_body: int,
    keep_alive: float,
    header_timeout: float,
    body_timeout: float,
    max_connections: int,
) -> tuple[HttpGuards, ConnectionPolicy]:
    """The guards and connection policy the options ask for; ValueError (one sentence) for a
    value that cannot work."""
    from tau_mcp.servers.http_stack import HttpGuards

    for name, value in (
        ("--max-body", max_body),
        ("--keep-alive", keep_alive),
        ("--header-timeout", header_timeout),
        ("--body-timeout", body_timeout),
        ("--max-connections", max_connections),
    ):
        if value <= 0:
            raise ValueError(f"{name} must be positive, not {value:g}")
    guards = HttpGuards(
        token=token or None,
        allowed_hosts=allowed_hosts_for(host, allow_host or ()),
        allowed_origins=tuple(allow_origin or ()),
        max_body_bytes=max_body,
        body_timeout=body_timeout,
    )
    return guards, ConnectionPolicy(keep_alive, header_timeout, max_connections)
