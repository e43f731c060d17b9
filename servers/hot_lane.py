"""One pass for the request a run makes most: a sessionless MCP tool call on an episode.

Behind `tau_mcp.servers.http_stack`'s guard stack a request crosses six ASGI layers (Starlette's
error middleware, `ErrorsAsJson`, `HostOriginGuard`, `BearerTokenGuard`, `BodySizeLimit`,
`JsonBodyGuard`) before the short path (`tau_mcp.servers.fast_calls`) answers it; each layer is
a coroutine, most wrap `send`, and together they cost more server CPU than the call's own work.

`HotLane` sits outside them all. It admits a request only when every configured guard would let
it through untouched, judged in one pass over its headers with the guards' own predicates
(`tau_mcp.servers.guards.host_allowed`, `is_json`, `auth.bearer_ok`) and the guards' own body
reading and JSON checks (`guards.receive_body`, `guards.body_problem`); the short path then
answers it. Everything else (another route, an `Origin`, a chunked or oversized body, a failing
check, a request the short path declines) goes down the full stack, its body handed on, and is
answered there exactly as without the lane. The lane itself answers only what the full stack
would answer at the same point: the body deadline's 408 (the first check that reads the body)
and an exception's JSON answer (the app's own handlers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tau_mcp.servers.auth import bearer_ok, bearer_value
from tau_mcp.servers.guards import (
    body_problem,
    guarded_headers,
    host_allowed,
    host_names,
    is_json,
    receive_body,
    replay_body,
)

#: Answers an admitted request from its body (True), or declines it (False: nothing was sent).
HotAnswer = Callable[[Scope, bytes, Send], Awaitable[bool]]

#: Picks the answer for a request on the lane's route (having set the route's path parameters
#: in the scope, as the router would), else None.
HotPick = Callable[[Scope], HotAnswer | None]


class HotLane:
    """The lane in front of a guarded app (see the module docstring). `guards` is the app's
    `HttpGuards`: the lane checks exactly the guards the stack has."""

    def __init__(
        self,
        app: ASGIApp,
        guards: Any,
        pick: HotPick,
        handlers: dict[Any, Callable],
    ) -> None:
        self.app, self.pick, self.handlers = app, pick, handlers
        self.network = guards.network
        self.hosts = host_names(guards.allowed_hosts)
        self.expected = bearer_value(guards.token) if guards.token else None
        self.max_body = guards.max_body_bytes
        self.body_timeout = guards.body_timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self.pick(scope) if scope["type"] == "http" and scope["method"] == "POST" else None
        if answer is None or not self._admitted(scope["headers"]):
            await self.app(scope, receive, send)
            return
        if self.network:
            body = await receive_body(scope, receive, send, self.body_timeout)
            if body is None:  # the client went away, or was answered 408 as the stack would
                return
            if not body.strip() or body_problem(scope, body) is not None:
                await self.app(scope, replay_body(body, receive), send)
                return
        else:
            body = await _whole_body(receive)
            if body is None:
                return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            answered = await answer(scope, body, tracking_send)
        except Exception as exc:
            if started:
                raise
            await answer_exception(self.handlers, exc, scope, receive, send)
            return
        if not answered:
            await self.app(scope, replay_body(body, receive), send)

    def _admitted(self, headers: list[tuple[bytes, bytes]]) -> bool:
        """Whether every configured guard lets a request with these headers through untouched
        (its body is checked after), read as the guards read them (`guarded_headers`)."""
        host, origin, content_type, length, chunked, authorization = guarded_headers(headers)
        if origin is not None or chunked is not None:
            return False  # CORS headers to add, or a body to count as it streams
        if self.expected is not None and not bearer_ok(authorization, self.expected):
            return False
        if not self.network:
            return True
        if length is None or not is_json(content_type) or not host_allowed(self.hosts, host):
            return False
        try:
            declared = int(length)
        except ValueError:
            return False
        return 0 < declared <= self.max_body


async def answer_exception(
    handlers: dict[Any, Callable], exc: Exception, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer an exception raised before any response started with the app's handler for its
    type, as Starlette does; re-raise it when there is none."""
    handler = next((handlers[k] for k in type(exc).__mro__ if k in handlers), None)
    if handler is None:
        raise exc
    response = await handler(Request(scope, receive, send), exc)
    await response(scope, receive, send)


async def _whole_body(receive: Receive) -> bytes | None:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)
