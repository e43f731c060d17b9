"""The one HTTP toolkit every server of the project is built with: `tau-server` and
`tau-harness serve` (and `run --agent cmd`'s loopback server, the same app).

    app = guarded_app(routes, HttpGuards(...), lifespan=...)   # the app, behind every guard
    tau_mcp.servers.http_server.run(app, sock, ConnectionPolicy(...))  # uvicorn with the connection policy

The guards, outermost first (see `tau_mcp.servers.guards`, `tau_mcp.servers.auth`, `tau_mcp.servers.limits`):

- `ErrorsAsJson`: any error answer that is not JSON becomes `{"error": ...}` (a JSON-RPC error
  object on MCP paths), status kept;
- `HostOriginGuard`: `Host` must be loopback, the bound address or `--allow-host` (421); a browser
  `Origin` must be the server itself or `--allow-origin` (403); CORS preflights; a POST body must
  be `application/json` (415);
- `BearerTokenGuard` when a token is set (401);
- `BodySizeLimit` (413) and `JsonBodyGuard`: the body within `body_timeout` (408), its JSON text
  within `tau_mcp.servers.limits` (depth, number length, lone surrogates: 400), JSON-RPC shape on MCP paths.

In front of all of them, `tau-server`'s app has a `HotLane` (`tau_mcp.servers.hot_lane`): a plain
sessionless tool call that every guard above would let through untouched is answered in one
pass with the guards' own checks; anything else goes down this stack.

Every exception a route raises is answered as JSON too: an `EngineError` with its status, an
HTTP error (404 no route, 405 method) with one sentence, anything else a 500 that names only the
exception's type.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tau_mcp.servers.auth import DEFAULT_MAX_BODY, BearerTokenGuard, BodySizeLimit, BodyTooLarge
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.guards import (
    DEFAULT_BODY_TIMEOUT,
    LOOPBACK_HOSTS,
    ErrorsAsJson,
    HostOriginGuard,
    JsonBodyGuard,
)
from tau_mcp.servers.hot_lane import HotLane, HotPick, answer_exception

log = logging.getLogger("tau.server")


@dataclass(frozen=True)
class HttpGuards:
    """What the guards let through (the command-line options of both servers)."""

    token: str | None = None
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    allowed_origins: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    # Host/Origin, body size, deadline and JSON text checks. Off only for an app no socket
    # reaches (the server the harness drives in its own process); errors stay JSON either way.
    network: bool = True


def guard_middleware(guards: HttpGuards) -> list[Middleware]:
    """The guard stack, outermost first, as Starlette middleware."""
    stack = [Middleware(ErrorsAsJson)]
    if guards.network:
        stack.append(
            Middleware(
                HostOriginGuard,
                allowed_hosts=guards.allowed_hosts,
                allowed_origins=guards.allowed_origins,
            )
        )
    if guards.token:
        stack.append(Middleware(BearerTokenGuard, token=guards.token))
    if guards.network:
        stack += [
            Middleware(BodySizeLimit, max_bytes=guards.max_body_bytes),
            Middleware(JsonBodyGuard, body_timeout=guards.body_timeout),
        ]
    return stack


def guarded_app(
    routes: Sequence[BaseRoute],
    guards: HttpGuards,
    *,
    lifespan: Callable[[Starlette], Any] | None = None,
    exception_handlers: dict[Any, Callable] | None = None,
    front: Front | None = None,
    hot: HotPick | None = None,
) -> Starlette:
    """A Starlette app behind the guard stack, answering every error as JSON. `front` picks
    the requests of the hottest routes, which then skip Starlette's router (`FrontRoutes`);
    `hot` picks the answer for the hottest request of all, a sessionless tool call, which a
    `HotLane` then gives in one pass when every guard would let it through."""
    handlers: dict[Any, Callable] = {
        EngineError: _engine_error,
        HTTPException: _http_error,
        BodyTooLarge: _too_large,
        **(exception_handlers or {}),
        Exception: _internal_error,
    }
    middleware = guard_middleware(guards)
    if front is not None:
        routed = {k: v for k, v in handlers.items() if k not in (Exception, 500)}
        middleware.append(Middleware(FrontRoutes, front=front, handlers=routed))
    if hot is None:
        return Starlette(
            routes=list(routes),
            middleware=middleware,
            lifespan=lifespan,
            exception_handlers=handlers,
        )
    return LanedStarlette(
        guards,
        hot,
        handlers,
        routes=list(routes),
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers=handlers,
    )


class LanedStarlette(Starlette):
    """A Starlette app with a `HotLane` (`tau_mcp.servers.hot_lane`) in front of its whole
    middleware stack, Starlette's own error middleware included."""

    def __init__(
        self, guards: HttpGuards, pick: HotPick, handlers: dict[Any, Callable], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.lane = HotLane(super().__call__, guards, pick, handlers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.lane(scope, receive, send)


#: Picks a request's endpoint when it is on one of the hottest routes (having put the route's
#: path parameters in the scope, as the router would), else None.
Front = Callable[[Scope], Callable[[Scope, Receive, Send], Awaitable[None]] | None]


class FrontRoutes:
    """The hottest routes (an episode's MCP endpoints: every tool call) dispatched before
    Starlette's router and its exception middleware, which cost ~10 µs a request: the endpoint
    `front` picks is called directly, and an exception it raises before its response starts is
    answered by the app's handler for it, as Starlette does (others go on to the server-error
    handler, as there). Every guard has run already: this is the innermost layer."""

    def __init__(self, app: ASGIApp, front: Front, handlers: dict[Any, Callable]) -> None:
        self.app, self.front, self.handlers = app, front, handlers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self.front(scope) if scope["type"] == "http" else None
        if endpoint is None:
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await endpoint(scope, receive, tracking_send)
        except Exception as exc:
            if started and any(k in self.handlers for k in type(exc).__mro__):
                raise RuntimeError(
                    "Caught handled exception, but response already started."
                ) from exc
            await answer_exception(self.handlers, exc, scope, receive, tracking_send)


class BadRequest(EngineError):
    """A request the server cannot read (answered 400)."""

    status = 400


async def json_object_body(request: Request) -> dict[str, Any]:
    """The request's JSON object body ({} when empty), else `BadRequest`."""
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise BadRequest("request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise BadRequest("request body must be a JSON object")
    return value


def json_error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _engine_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, EngineError)
    return json_error(exc.status, str(exc))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return json_error(405, f"method {request.method} not allowed here")
    if exc.status_code == 404 and exc.detail == "Not Found":
        return json_error(404, f"no route for {request.url.path}")
    return json_error(exc.status_code, str(exc.detail))


async def _too_large(request: Request, exc: Exception) -> JSONResponse:
    return json_error(413, "request body too large")


async def _internal_error(request: Request, exc: Exception) -> JSONResponse:
    if isinstance(exc, anyio.BrokenResourceError | anyio.ClosedResourceError):
        # The client went away while we answered (an in-process harness cancelling its
        # simulations after an error or Ctrl-C): nothing went wrong on our side.
        log.debug("client gone during %s %s", request.method, request.url.path)
        return json_error(499, "client went away")
    log.exception("unexpected error on %s %s", request.method, request.url.path)
    return json_error(500, f"internal server error ({type(exc).__name__})")


class AsgiEndpoint:
    """A raw ASGI endpoint for a `Route` (Starlette takes a plain function or bound method as a
    request handler): the MCP gateways, which hand the request on to an MCP app."""

    def __init__(self, handler: Callable[[Scope, Receive, Send], Any]) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)
