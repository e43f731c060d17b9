"""The HTTP face of `tau-harness serve`: create, read and end simulations, and each
simulation's MCP endpoint. Errors answer as the server's do: `{"error": "..."}` with a 4xx.

    POST /simulations            {"task_id": ID, "trial": 0} -> 201 {"simulation_id", "mcp"}
    GET  /simulations            -> 200 {"simulations": [{"simulation_id", "task_id", ...}]}
    GET  /simulations/{id}       -> 200 the simulation in the reference's results layout
    POST /simulations/{id}/end   -> 200 the same, once ended from the agent's side and graded
    *    /simulations/{id}/mcp   the simulation's MCP endpoint (streamable HTTP)
    GET  /health, GET /tasks?split=base

The app sits behind the same guard stack as `tau-server` (`tau_mcp.servers.http_stack`): Host/Origin
checks, CORS, JSON bodies only, size, deadline and JSON-text bounds, JSON errors everywhere.
Request fields are bounded by `tau_mcp.servers.limits` before any work.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tau_mcp.harness.redaction import redact
from tau_mcp.harness.serve.channel import MoveChannel
from tau_mcp.harness.serve.endpoint import SEND_MESSAGE, build_simulation_mcp
from tau_mcp.harness.serve.simulation import (
    Conflict,
    Simulation,
    SimulationHub,
    Unavailable,
    UnknownTask,
    make_hub,
)
from tau_mcp.servers.auth import send_json_error
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.http_stack import (
    AsgiEndpoint,
    HttpGuards,
    guarded_app,
    json_error,
    json_object_body,
)
from tau_mcp.servers.limits import id_field, json_utf8, trial_field
from tau_mcp.servers.surfaces import ShownTool, View, register_surface, variant_name


def simulation_from_scope() -> Simulation:
    """The simulation the gateway put in the current MCP request's scope."""
    from tau_mcp.servers.mcp_assembly import request_scope

    simulation = request_scope().get("tau.simulation")
    if simulation is None:  # pragma: no cover - the gateway always sets it
        raise LookupError("no simulation for this MCP request")
    return simulation


def channel_from_scope() -> MoveChannel:
    return simulation_from_scope().channel


def policy_from_scope() -> str:
    """The agent's policy in the simulation of the current request (its task's, for a
    retrieval config whose policy depends on the task)."""
    simulation = simulation_from_scope()
    return simulation.runner.policy_for(simulation.task)


class ServeApp:
    def __init__(self, hub: SimulationHub) -> None:
        self.hub = hub
        variant = hub.runner.variant
        self.mcp = build_simulation_mcp(
            hub.domain,
            SIMULATION_ENDPOINT.tools(hub.domain, "agent", variant_name(variant)),
            channel_from_scope,
            variant,
            policy_from_scope,
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
            return json_error(exc.status, str(exc))
        return JSONResponse({"tasks": [{"id": task_id} for task_id in ids]})

    async def create(self, request: Request) -> JSONResponse:
        body = await json_object_body(request)
        task_id, trial = id_field(body, "task_id", required=True), trial_field(body)
        try:
            simulation = self.hub.create(task_id, trial)
        except UnknownTask as exc:
            return json_error(404, str(exc))
        except Conflict as exc:
            return json_error(409, str(exc))
        except Unavailable as exc:
            return json_error(503, str(exc))
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
                "reward": s.record.reward if s.record is not None else None,
            }
            for s in self.hub.simulations.values()
        ]
        return JSONResponse({"simulations": items})

    async def view(self, request: Request) -> Response:
        return _json(self._simulation(request).view())

    async def end(self, request: Request) -> Response:
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

    def build(self, guards: HttpGuards) -> Starlette:
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/tasks", self.tasks, methods=["GET"]),
            Route("/simulations", self.create, methods=["POST"]),
            Route("/simulations", self.listing, methods=["GET"]),
            Route("/simulations/{simulation_id}", self.view, methods=["GET"]),
            Route("/simulations/{simulation_id}/end", self.end, methods=["POST"]),
            Route("/simulations/{simulation_id}/mcp", AsgiEndpoint(self.gateway)),
            Route("/simulations/{simulation_id}/mcp/", AsgiEndpoint(self.gateway)),
        ]
        app = guarded_app(routes, guards, lifespan=self.lifespan)
        app.state.hub = self.hub
        return app


def create_serve_app(hub: SimulationHub, guards: HttpGuards | None = None) -> Starlette:
    """The serve app behind the guard stack (default: loopback only, no token)."""
    return ServeApp(hub).build(guards or HttpGuards())


async def _shown_on_simulation_endpoint(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool]:
    """`tools/list` on a simulation's endpoint of a `tau-harness serve --retrieval-config
    <variant>` app (in-process)."""
    from tau_mcp.harness.backends.http import in_process_backend
    from tau_mcp.harness.config import RunConfig
    from tau_mcp.servers.guards import LOOPBACK_HOSTS
    from tau_mcp.servers.mcp_probe import PROBE_HOST, listed_tools, running

    backend = await in_process_backend({domain.name: domain})
    try:
        config = RunConfig(
            domain=domain.name,
            agent="mcp",
            user="scripted",
            retrieval_config=variant,
            judge_llm="none",
        )
        hub = make_hub(backend, domain, config)
        app = create_serve_app(hub, HttpGuards(allowed_hosts=(*LOOPBACK_HOSTS, PROBE_HOST)))
        try:
            async with running(app):
                simulation = hub.create(next(iter(domain.tasks)))
                return await listed_tools(app, simulation.mcp_path)
        finally:
            await hub.close()
    finally:
        await backend.close()


#: `tau-harness serve`'s `/simulations/{id}/mcp` (and `run --agent cmd`'s, the same app).
SIMULATION_ENDPOINT = register_surface(
    "tau-harness serve /simulations/{id}/mcp",
    ("agent",),
    _shown_on_simulation_endpoint,
    extra_tools=(SEND_MESSAGE,),
)


def _json(value: dict[str, Any]) -> Response:
    """A simulation as JSON, with every secret in play redacted; text that holds a lone
    surrogate (only a model's output could) is written escaped rather than failing the read."""
    return Response(json_utf8(redact(value), default=str), media_type="application/json")
