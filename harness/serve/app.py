"""The HTTP face of `tau-harness serve`: create, read and end simulations, and each
simulation's MCP endpoint. Errors answer as the server's do: `{"error": "..."}` with a 4xx.

    POST /simulations            {"task_id": ID, "trial": 0} -> 201 {"simulation_id", "mcp"}
    GET  /simulations            -> 200 {"simulations": [{"simulation_id", "task_id", ...}]}
    GET  /simulations/{id}       -> 200 the simulation in the reference's results layout
    POST /simulations/{id}/end   -> 200 the same, once ended from the agent's side and graded
    *    /simulations/{id}/mcp   the simulation's MCP endpoint (streamable HTTP)
    GET  /health, GET /tasks?split=base
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from harness.redaction import redact
from harness.serve.channel import MoveChannel
from harness.serve.endpoint import build_simulation_mcp
from harness.serve.simulation import (
    Conflict,
    Simulation,
    SimulationHub,
    Unavailable,
    UnknownTask,
)
from servers.auth import DEFAULT_MAX_BODY, BearerTokenGuard, BodySizeLimit, send_json_error
from servers.engine.errors import EngineError


def channel_from_scope() -> MoveChannel:
    from fastmcp.server.dependencies import get_http_request

    simulation = get_http_request().scope.get("tau.simulation")
    if simulation is None:  # pragma: no cover - the gateway always sets it
        raise LookupError("no simulation for this MCP request")
    return simulation.channel


class _Asgi:
    """Marks a bound coroutine as a raw ASGI endpoint."""

    def __init__(self, handler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.handler(scope, receive, send)


class ServeApp:
    def __init__(self, hub: SimulationHub) -> None:
        self.hub = hub
        self.mcp = build_simulation_mcp(
            hub.domain, channel_from_scope, hub.runner.variant
        ).http_app(path="/mcp", json_response=True)

    @asynccontextmanager
    async def lifespan(self, app: Starlette):
        async with self.mcp.router.lifespan_context(self.mcp):
            yield

    def _simulation(self, request: Request) -> Simulation:
        simulation_id = request.path_params["simulation_id"]
        simulation = self.hub.get(simulation_id)
        if simulation is None:
            raise HTTPException(
                404,
                f"unknown simulation '{simulation_id}' (ended ones are forgotten after a while; "
                "their records are in the results file)",
            )
        return simulation

    # --- routes -----------------------------------------------------------------------------
    async def health(self, request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "domain": self.hub.domain.name})

    async def tasks(self, request: Request) -> JSONResponse:
        split = request.query_params.get("split", "base")
        try:
            ids = self.hub.domain.task_ids(split)
        except EngineError as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)
        return JSONResponse({"tasks": [{"id": task_id} for task_id in ids]})

    async def create(self, request: Request) -> JSONResponse:
        body = await _json_body(request)
        task_id, trial = body.get("task_id"), body.get("trial", 0)
        if not isinstance(task_id, str) or not task_id:
            return _error(400, "'task_id' must be a task id (a string)")
        if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
            return _error(400, "'trial' must be a whole number >= 0")
        try:
            simulation = self.hub.create(task_id, trial)
        except UnknownTask as exc:
            return _error(404, str(exc))
        except Conflict as exc:
            return _error(409, str(exc))
        except Unavailable as exc:
            return _error(503, str(exc))
        return JSONResponse(
            {"simulation_id": simulation.id, "mcp": simulation.mcp_path}, status_code=201
        )

    async def listing(self, request: Request) -> JSONResponse:
        items = [
            {
                "simulation_id": s.id,
                "task_id": s.task.id,
                "trial": s.trial,
                "status": s.status,
                "mcp": s.mcp_path,
                "reward": ((s.record or {}).get("reward_info") or {}).get("reward"),
            }
            for s in self.hub.simulations.values()
        ]
        return JSONResponse({"simulations": items})

    async def view(self, request: Request) -> JSONResponse:
        return _json(self._simulation(request).view())

    async def end(self, request: Request) -> JSONResponse:
        simulation = self._simulation(request)
        await simulation.end()
        return _json(simulation.view())

    async def gateway(self, scope: Scope, receive: Receive, send: Send) -> None:
        simulation_id = scope["path_params"]["simulation_id"]
        simulation = self.hub.get(simulation_id)
        if simulation is None:
            await send_json_error(send, 404, f"unknown simulation '{simulation_id}'")
            return
        scope = {**scope, "tau.simulation": simulation, "path": "/mcp", "root_path": ""}
        await self.mcp(scope, receive, send)

    def build(self, token: str | None = None, max_body: int = DEFAULT_MAX_BODY) -> Starlette:
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/tasks", self.tasks, methods=["GET"]),
            Route("/simulations", self.create, methods=["POST"]),
            Route("/simulations", self.listing, methods=["GET"]),
            Route("/simulations/{simulation_id}", self.view, methods=["GET"]),
            Route("/simulations/{simulation_id}/end", self.end, methods=["POST"]),
            Route("/simulations/{simulation_id}/mcp", _Asgi(self.gateway)),
            Route("/simulations/{simulation_id}/mcp/", _Asgi(self.gateway)),
        ]
        middleware = [Middleware(BodySizeLimit, max_bytes=max_body)]
        if token:
            middleware.insert(0, Middleware(BearerTokenGuard, token=token))
        app = Starlette(
            routes=routes,
            middleware=middleware,
            lifespan=self.lifespan,
            exception_handlers={HTTPException: _http_error, _BadJson: _bad_json},
        )
        app.state.hub = self.hub
        return app


def create_serve_app(hub: SimulationHub, token: str | None = None) -> Starlette:
    return ServeApp(hub).build(token)


class _BadJson(Exception):
    pass


async def _json_body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise _BadJson("request body is not valid JSON") from None
    if not isinstance(value, dict):
        raise _BadJson("request body must be a JSON object")
    return value


def _json(value: dict[str, Any]) -> JSONResponse:
    return JSONResponse(redact(json.loads(json.dumps(value, default=str))))


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _bad_json(request: Request, exc: Exception) -> JSONResponse:
    return _error(400, str(exc))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    messages = {
        404: str(exc.detail) if exc.detail != "Not Found" else f"no route for {request.url.path}",
        405: f"method {request.method} not allowed here",
    }
    return _error(exc.status_code, messages.get(exc.status_code, str(exc.detail)))
