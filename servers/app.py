"""The `tau-server` HTTP application: episode routes, MCP endpoints, the Eval Protocol path.

One process serves several domains. Each (domain, side) has one FastMCP app that serves every
episode (on the agent side of a domain with retrieval configs, one per config, built on first
use); a small gateway in front of it puts the episode named in the URL path into the request
scope, where the tools find it. Starlette's `Mount` does not run a sub-app's lifespan, so the
app's own lifespan starts every MCP session manager.
"""

from __future__ import annotations

import logging
import os
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tau_mcp.servers import mcp_sessions, routing
from tau_mcp.servers.auth import DEFAULT_MAX_BODY, send_json_error
from tau_mcp.servers.domains.registry import load_domains
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import TASK_SET_OPTION, Episode, EpisodeStore
from tau_mcp.servers.engine.errors import EngineError, UnknownEpisode
from tau_mcp.servers.engine.fault_profiles import resolve_faults
from tau_mcp.servers.engine.faults import FAULTS_OPTION, PROFILE_OPTION, FaultPlan
from tau_mcp.servers.engine.ids import check_episode_id
from tau_mcp.servers.engine.toolkit import Side
from tau_mcp.servers.engine.variants import KWARGS_OPTION, NAME_OPTION, Variant
from tau_mcp.servers.ep import EvalProtocolBridge
from tau_mcp.servers.fast_calls import FastToolCalls
from tau_mcp.servers.guards import DEFAULT_BODY_TIMEOUT, LOOPBACK_HOSTS
from tau_mcp.servers.hot_lane import HotAnswer
from tau_mcp.servers.http_stack import (
    AsgiEndpoint,
    BadRequest,
    HttpGuards,
    guarded_app,
    json_object_body,
)
from tau_mcp.servers.limits import id_field, json_utf8, name_field, options_field, spec_field
from tau_mcp.servers.mcp_apps import McpApps
from tau_mcp.servers.mcp_listing import named
from tau_mcp.servers.mcp_protocol import MODERN_VERSION
from tau_mcp.servers.surfaces import ListingMismatch, ShownTool, View, register_surface

log = logging.getLogger("tau.server")

DEFAULT_EPISODE = routing.DEFAULT_EPISODE
SIDES: tuple[Side, ...] = ("agent", "user")


async def _shown_on_side_endpoints(
    domain: Domain, view: View, variant: str | None
) -> list[ShownTool]:
    """`tools/list` on the default endpoint of the side of a server started with
    `--retrieval-config <variant>` and on an episode created with `retrieval_config: <variant>`,
    in the modern protocol (the short path) and with a legacy session (FastMCP); all four must
    agree."""
    from tau_mcp.servers.mcp_probe import PROBE_HOST, created_episode, listed_tools, running

    settings = ServerSettings(allowed_hosts=(*LOOPBACK_HOSTS, PROBE_HOST), retrieval_config=variant)
    async with running(TauServer({domain.name: domain}, settings).build()) as app:
        created = await created_episode(app, domain.name, {NAME_OPTION: variant})
        paths = (f"/{domain.name}/{view}/mcp", created[f"{view}_mcp"])
        seen = {
            (path, mode): await listed_tools(app, path, mode)
            for path in paths
            for mode in (MODERN_VERSION, "legacy")
        }
    first = next(iter(seen.values()))
    for (path, mode), tools in seen.items():
        if tools != first:
            raise ListingMismatch(f"{path} ({mode}) lists other tools than {paths[0]}")
    return first


async def _shown_on_ep_endpoint(domain: Domain, view: View, variant: str | None) -> list[ShownTool]:
    """`tools/list` on `/{domain}/mcp`: in the modern protocol on the server's default episode
    (`--retrieval-config <variant>`), and to an Eval Protocol session whose row config names
    the variant (legacy handshake, as EP connects); both must agree."""
    from tau_mcp.servers.mcp_probe import PROBE_HOST, listed_tools, listed_tools_as_ep, running

    settings = ServerSettings(allowed_hosts=(*LOOPBACK_HOSTS, PROBE_HOST), retrieval_config=variant)
    async with running(TauServer({domain.name: domain}, settings).build()) as app:
        modern = await listed_tools(app, f"/{domain.name}/mcp")
        legacy = await listed_tools_as_ep(app, f"/{domain.name}/mcp/", {NAME_OPTION: variant})
    if modern != legacy:
        raise ListingMismatch(f"/{domain.name}/mcp lists other tools to Eval Protocol sessions")
    return modern


#: The agent and user endpoints: `/{domain}/{side}/mcp` and `/{domain}/episodes/{id}/{side}/mcp`.
SIDE_ENDPOINTS = register_surface(
    "tau-server /{domain}/{side}/mcp", ("agent", "user"), _shown_on_side_endpoints
)
#: The Eval Protocol endpoint `/{domain}/mcp` (agent tools, results as JSON objects).
EP_ENDPOINT = register_surface(
    "tau-server /{domain}/mcp (Eval Protocol)", ("agent",), _shown_on_ep_endpoint
)


@dataclass
class ServerSettings:
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY
    capacity: int = 20_000
    wrap_ep_results: bool | None = None  # None: $TAU_EP_WRAP_RESULTS, default on
    warm: bool = True  # load every domain's data before taking traffic
    # Build the FastMCP apps on first need instead of at start (see servers.mcp_apps): for a
    # server in the harness's own process, whose clients only list and call tools.
    lazy_mcp: bool = False
    # The guards against network clients (Host/Origin, body size and timeout, JSON shape). Off
    # only for a server no socket reaches: one the harness drives in its own process.
    network_guards: bool = True
    # `Host` names answered (DNS-rebinding guard) and browser origins allowed (CORS).
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    allowed_origins: tuple[str, ...] = ()
    body_timeout: float = DEFAULT_BODY_TIMEOUT  # seconds to receive a whole request body
    # The retrieval config (and its kwargs) of episodes that name none, for domains that have
    # retrieval configs (banking_knowledge); None: each domain's own default.
    retrieval_config: str | None = None
    retrieval_kwargs: dict[str, Any] | None = None
    # This process's place among `tau-server serve --workers N`'s: (index, count). It owns the
    # episodes `routing.owner` gives it, draws the ids of unnamed episodes among those, and
    # names itself in `/health`.
    worker: tuple[int, int] | None = None
    # The faults of episodes that name none (`tau-server serve --faults`; None: no faults).
    faults: FaultPlan | None = None

    def guards(self) -> HttpGuards:
        return HttpGuards(
            token=self.token,
            allowed_hosts=self.allowed_hosts,
            allowed_origins=self.allowed_origins,
            max_body_bytes=self.max_body_bytes,
            body_timeout=self.body_timeout,
            network=self.network_guards,
        )


def episode_from_scope() -> Episode:
    """The episode the gateway put in the current HTTP request's scope."""
    from tau_mcp.servers.mcp_assembly import request_scope

    episode = request_scope().get("tau.episode")
    if episode is None:
        raise UnknownEpisode("this MCP endpoint's episode no longer exists")
    return episode


class TauServer:
    """Everything one server process holds: domains, episodes and the MCP apps."""

    def __init__(self, domains: dict[str, Domain], settings: ServerSettings | None = None) -> None:
        self.domains = domains
        self.settings = settings or ServerSettings()
        worker = self.settings.worker
        self.store = EpisodeStore(
            domains,
            capacity=self.settings.capacity,
            new_id=routing.id_maker(*worker) if worker is not None else None,
        )
        lazy = self.settings.lazy_mcp
        # One MCP app per (domain, side, variant): a domain with retrieval configs lists each
        # config's agent tools on an app of its own, built when an episode first needs it.
        eager: dict = {}
        on_demand: dict = {}
        for name, domain in domains.items():
            for side in SIDES:
                variants = self.variant_names(domain, side)
                if variants is None:
                    eager[(name, side, None)] = self._side_app_builder(name, side, None)
                for variant in variants or ():
                    on_demand[(name, side, variant)] = self._side_app_builder(name, side, variant)
        self.mcp_apps = McpApps(eager, lazy=lazy, on_demand=on_demand)
        self.fast_calls: dict[tuple[str, str, str | None], FastToolCalls] = {}  # fast_calls.py
        for key in [*eager, *on_demand]:
            fast = FastToolCalls.for_domain(domains[key[0]], key[1], SIDE_ENDPOINTS, key[2])
            if fast is not None:
                self.fast_calls[key] = fast
        ep_eager = {
            (name, None): self._ep_app_builder(name, None)
            for name, domain in domains.items()
            if domain.variants is None
        }
        ep_on_demand = {
            (name, variant): self._ep_app_builder(name, variant)
            for name, domain in domains.items()
            for variant in (self.variant_names(domain, "agent") or ())
        }
        ep_apps = McpApps(ep_eager, lazy=lazy, on_demand=ep_on_demand)
        self.ep = EvalProtocolBridge(
            self.store, ep_apps, self.default_episode, self.resolve_variant, self.episode_faults
        )
        self._serializer_limiter: anyio.CapacityLimiter | None = None

    # --- retrieval configs (engine variants) ------------------------------------------------
    @staticmethod
    def variant_names(domain: Domain, side: Side) -> list[str] | None:
        """The variants whose tools differ on this side (None: one set of tools)."""
        catalog = domain.variants
        return list(catalog.names) if catalog is not None and side == "agent" else None

    def resolve_variant(
        self, domain: Domain, name: str | None, kwargs: dict[str, Any] | None
    ) -> Variant | None:
        """An episode's variant: the one asked for, else the server's default (for domains that
        have retrieval configs); one sentence (400) when it is unknown or cannot run here."""
        if domain.variants is not None and name is None:
            name = self.settings.retrieval_config
            kwargs = self.settings.retrieval_kwargs if kwargs is None else kwargs
        return domain.resolve_variant(name, kwargs)

    def episode_faults(self, fields: dict[str, Any], where: str) -> FaultPlan | None:
        """The faults an episode's creation asks for (`faults`, `faults_profile`: a shipped
        profile's name, never a file), else the server's default; one sentence (400) when
        they cannot be read."""
        spec = spec_field(fields, FAULTS_OPTION)
        profile = name_field(fields, PROFILE_OPTION)
        if spec is None and profile is None:
            return self.settings.faults
        return resolve_faults(spec, profile, where, paths=False)

    @staticmethod
    def app_key(domain: str, side: str, episode: Episode | None) -> tuple:
        variant = episode.variant if episode is not None and side == "agent" else None
        return (domain, side, variant.name if variant is not None else None)

    def endpoint_key(self, domain: str, side: str, episode: Episode | None) -> tuple:
        """The (domain, side, variant) whose MCP app and short path serve this episode's side."""
        key = self.app_key(domain, side, episode)
        if key not in self.fast_calls and not self.mcp_apps.knows(key):
            # An episode without a config in a domain that has them: its toolkit is the
            # config the domain's own toolkit is (banking_knowledge: no_knowledge).
            key = (domain, side, self.store.domain(domain).spec.tool_variant)
        return key

    def _side_app_builder(self, domain: str, side: Side, variant: str | None):
        def build():
            from tau_mcp.servers.mcp_tools import build_mcp_server

            server = build_mcp_server(
                self.domains[domain], side, episode_from_scope, SIDE_ENDPOINTS, variant=variant
            )
            return server.http_app(path="/mcp", json_response=True)

        return build

    def _ep_app_builder(self, domain: str, variant: str | None):
        def build():
            from tau_mcp.servers.integrations.ep_calls import record_tool_calls
            from tau_mcp.servers.mcp_tools import build_mcp_server

            ep_server = build_mcp_server(
                self.domains[domain],
                "agent",
                episode_from_scope,
                EP_ENDPOINT,
                style="json_object",
                wrap_ep_results=self.settings.wrap_ep_results,
                name=named(self.domains[domain], "eval-protocol"),
                variant=variant,
            )
            record_tool_calls(ep_server, episode_from_scope)
            return ep_server.http_app(path="/mcp", json_response=True)

        return build

    def default_episode(self, domain: str) -> Episode:
        """The domain's shared episode for manual use, created from the domain DB on demand."""
        episode = self.store.find(domain, DEFAULT_EPISODE)
        if episode is None:
            variant = self.resolve_variant(self.store.domain(domain), None, None)
            episode = self.store.create(
                domain,
                None,
                DEFAULT_EPISODE,
                replace=True,
                variant=variant,
                faults=self.settings.faults,
            )
        return episode

    def all_mcp_apps(self) -> list[Starlette]:
        """The MCP apps built so far (all of them unless built on first need)."""
        return [*self.mcp_apps.built(), *self.ep.mcp_apps.built()]

    @asynccontextmanager
    async def lifespan(self, app: Starlette):
        if self.settings.warm:
            for domain in self.domains.values():
                domain.warm()
        async with self.mcp_apps.running(), self.ep.mcp_apps.running():
            log.info("serving domains: %s", ", ".join(self.domains) or "none")
            yield

    # --- MCP gateways -----------------------------------------------------------------------
    async def episode_gateway(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope["path_params"]
        await self._to_mcp(
            scope, receive, send, params["domain"], params["side"], params["episode_id"]
        )

    async def default_gateway(self, scope: Scope, receive: Receive, send: Send) -> None:
        params = scope["path_params"]
        await self._to_mcp(scope, receive, send, params["domain"], params["side"], None)

    async def _to_mcp(
        self,
        scope: Scope,
        receive: Receive,
        send: Send,
        domain: str,
        side: str,
        episode_id: str | None,
    ) -> None:
        if domain not in self.domains or side not in SIDES:
            reason = (
                f"unknown domain '{domain}'"
                if domain not in self.domains
                else f"unknown side '{side}' (agent or user)"
            )
            await send_json_error(send, 404, reason)
            return
        if episode_id is None:
            try:
                episode: Episode | None = self.default_episode(domain)
            except EngineError as exc:  # the server's default retrieval config cannot run
                await send_json_error(send, exc.status, str(exc))
                return
        else:
            episode = self.store.find(domain, episode_id)
            if episode is None and scope["method"] != "DELETE":
                await send_json_error(
                    send, 404, f"unknown episode '{episode_id}' in domain '{domain}'"
                )
                return
        key = self.endpoint_key(domain, side, episode)
        fast = self.fast_calls.get(key)
        if fast is not None and episode is not None:
            replay = await fast.serve(scope, receive, send, episode)
            if replay is None:
                return
            receive = replay
        app = await self.mcp_apps.get(key)
        if episode_id is not None and episode is not None:
            transport_id = dict(scope["headers"]).get(b"mcp-session-id")
            send = mcp_sessions.track(
                episode, app, scope["method"], transport_id and transport_id.decode("latin-1"), send
            )
        await app({**scope, "tau.episode": episode, "path": "/mcp", "root_path": ""}, receive, send)

    # --- HTTP routes ------------------------------------------------------------------------
    async def health(self, request: Request) -> JSONResponse:
        answer: dict[str, Any] = {"status": "ok", "domains": list(self.domains)}
        if self.settings.worker is not None:
            answer["worker"] = {
                "index": self.settings.worker[0],
                "pid": os.getpid(),
                "episodes": len(self.store),
            }
        return JSONResponse(answer)

    async def tasks(self, request: Request) -> JSONResponse:
        domain = self.store.domain(request.path_params["domain"])
        split = request.query_params.get("split") or domain.default_split
        return JSONResponse({"tasks": [{"id": task_id} for task_id in domain.task_ids(split)]})

    async def create_episode(self, request: Request) -> JSONResponse:
        domain = request.path_params["domain"]
        loaded = self.store.domain(domain)
        body = await json_object_body(request)
        task_id = id_field(body, "task_id")
        episode_id = id_field(body, "episode_id")
        if episode_id is not None:
            check_episode_id(episode_id)
        config = name_field(body, NAME_OPTION)
        kwargs = options_field(body, KWARGS_OPTION)
        # A client bound to a named task set (`--task-set-name`) sends it: the episode starts
        # from that set's task, the one the client grades against. The answer names it, so a
        # client can tell this server from one that ignored the field.
        task_set = name_field(body, TASK_SET_OPTION)
        variant = self.resolve_variant(loaded, config, kwargs)
        faults = self.episode_faults(body, "'faults'")
        episode = self.store.create(
            domain, task_id, episode_id, variant=variant, task_set=task_set, faults=faults
        )
        base = f"/{domain}/episodes/{episode.id}"
        answer = {
            "episode_id": episode.id,
            "agent_mcp": f"{base}/agent/mcp",
            "user_mcp": f"{base}/user/mcp",
        }
        if task_set is not None:
            answer[TASK_SET_OPTION] = task_set
        return JSONResponse(answer, status_code=201, headers={"location": base})

    def _serializers(self) -> anyio.CapacityLimiter:
        """At most two threads serialize states at once. The GIL makes more no faster, and each
        extra thread that builds a multi-megabyte state gets its own malloc arena, which keeps
        the freed memory: with anyio's default 40 threads, a soak reading airline states held
        ~100 MB more resident memory than it used (allocator retention, not a leak)."""
        if self._serializer_limiter is None:  # created on the serving event loop
            self._serializer_limiter = anyio.CapacityLimiter(SERIALIZER_THREADS)
        return self._serializer_limiter

    def _episode(self, request: Request) -> Episode:
        return self.store.get(request.path_params["domain"], request.path_params["episode_id"])

    async def state(self, request: Request) -> Response:
        episode = self._episode(request)
        body = await anyio.to_thread.run_sync(
            _locked_json, episode, episode.snapshot, limiter=self._serializers()
        )
        return Response(body, media_type="application/json")

    async def hashes(self, request: Request) -> Response:
        # On the event loop: a hash reads only what the episode changed (plus at most one pass
        # of sha256 over the base text, ~2 ms for airline), cheaper than a thread hop.
        episode = self._episode(request)
        return Response(_locked_json(episode, episode.hashes), media_type="application/json")

    async def changes(self, request: Request) -> Response:
        # On the event loop, like the hash: it reads and dumps only the records the episode
        # changed (the diagnosis of a failed DB check compares these, not two whole states).
        episode = self._episode(request)
        return Response(
            _locked_json(episode, episode.changed_records), media_type="application/json"
        )

    async def faults(self, request: Request) -> JSONResponse:
        """The episode's fault plan and every fault injected so far (null plan: none)."""
        injector = self._episode(request).faults
        if injector is None:
            return JSONResponse({"plan": None, "faults": []})
        return JSONResponse({"plan": injector.plan.body(), "faults": list(injector.log)})

    async def delete_episode(self, request: Request) -> Response:
        domain, episode_id = request.path_params["domain"], request.path_params["episode_id"]
        episode = self.store.find(domain, episode_id)
        self.store.delete(domain, episode_id)
        self.ep.forget(domain, episode_id)
        if episode is not None:
            await mcp_sessions.end_sessions(episode)
        return Response(status_code=204)

    async def assertions(self, request: Request) -> JSONResponse:
        episode = self._episode(request)
        items = _list_field(await json_object_body(request), "assertions")
        return JSONResponse({"results": episode.check_assertions(items)})

    async def replay(self, request: Request) -> JSONResponse:
        episode = self._episode(request)
        body = await json_object_body(request)
        calls = _list_field(body, "calls")
        only_mutating = bool(body.get("only_mutating", False))
        parsed = [_parse_call(index, call) for index, call in enumerate(calls)]
        return JSONResponse({"outputs": episode.replay(parsed, only_mutating)})

    # --- assembly ---------------------------------------------------------------------------
    def routes(self) -> list[Route]:
        ep = self.ep
        routes = [
            # The hot path first: the router tries routes in order. No other route has five
            # segments ending in `mcp`, so its place changes no match.
            Route("/{domain}/episodes/{episode_id}/{side}/mcp", AsgiEndpoint(self.episode_gateway)),
            Route("/health", self.health, methods=["GET"]),
            Route("/{domain}/tasks", self.tasks, methods=["GET"]),
            Route("/{domain}/episodes", self.create_episode, methods=["POST"]),
            Route("/{domain}/episodes/{episode_id}", self.delete_episode, methods=["DELETE"]),
            Route("/{domain}/episodes/{episode_id}/state", self.state, methods=["GET"]),
            Route("/{domain}/episodes/{episode_id}/hash", self.hashes, methods=["GET"]),
            Route("/{domain}/episodes/{episode_id}/changes", self.changes, methods=["GET"]),
            Route("/{domain}/episodes/{episode_id}/faults", self.faults, methods=["GET"]),
            Route("/{domain}/episodes/{episode_id}/assertions", self.assertions, methods=["POST"]),
            Route("/{domain}/episodes/{episode_id}/replay", self.replay, methods=["POST"]),
            Route("/{domain}/control/initial_state", ep.initial_state, methods=["GET"]),
            Route("/{domain}/control/reward", ep.reward, methods=["GET"]),
            Route("/{domain}/control/status", ep.status, methods=["GET"]),
            Route("/{domain}/control/reset_session", ep.reset_session, methods=["POST"]),
        ]
        # MCP endpoints answer with and without a trailing slash (clients differ; EP adds one).
        routes.append(
            Route("/{domain}/episodes/{episode_id}/{side}/mcp/", AsgiEndpoint(self.episode_gateway))
        )
        for suffix in ("", "/"):
            routes += [
                Route("/{domain}/{side}/mcp" + suffix, AsgiEndpoint(self.default_gateway)),
                Route("/{domain}/mcp" + suffix, AsgiEndpoint(ep.gateway)),
            ]
        return routes

    def front(self, scope: Scope) -> Any:
        """The episode MCP gateway for a request on `/{domain}/episodes/{id}/{side}/mcp` (every
        tool call), with its path parameters set as the router would; else None (the router's
        turn). Its route is the router's first, so the router would pick it too."""
        parts = scope["path"].split("/")
        if (
            len(parts) == 6
            and parts[2] == "episodes"
            and parts[5] == "mcp"
            and not parts[0]
            and parts[1]
            and parts[3]
            and parts[4]
            and not scope.get("root_path")
        ):
            scope["path_params"] = {"domain": parts[1], "episode_id": parts[3], "side": parts[4]}
            return self.episode_gateway
        return None

    def hot(self, scope: Scope) -> HotAnswer | None:
        """The short path's answer for a POST on an episode's MCP endpoint (`front`'s route),
        for the `HotLane` in front of every guard; else None."""
        return self._hot_answer if self.front(scope) is not None else None

    async def _hot_answer(self, scope: Scope, body: bytes, send: Send) -> bool:
        """A sessionless tool call or listing answered from `body` (True), or declined (False):
        an unknown domain, side or episode, or a request the short path does not take, goes on
        to the gateway, which answers it as ever."""
        params = scope["path_params"]
        domain, side = params["domain"], params["side"]
        if domain not in self.domains or side not in SIDES:
            return False
        episode = self.store.find(domain, params["episode_id"])
        if episode is None:
            return False
        fast = self.fast_calls.get(self.endpoint_key(domain, side, episode))
        return fast is not None and await fast.answer(scope, body, send, episode)

    def build(self) -> Starlette:
        app = guarded_app(
            self.routes(),
            self.settings.guards(),
            lifespan=self.lifespan,
            front=self.front,
            hot=self.hot,
        )
        app.state.tau = self
        return app


def create_app(
    domains: dict[str, Domain] | None = None,
    *,
    domain_names: list[str] | None = None,
    data_dir: str | Path | None = None,
    settings: ServerSettings | None = None,
) -> Starlette:
    """The server app for the given domains (default: every domain found in the data folder)."""
    if domains is None:
        domains = load_domains(domain_names, data_dir)
    return TauServer(domains, settings).build()


# --- helpers ----------------------------------------------------------------------------------
SERIALIZER_THREADS = 2


def _locked_json(episode: Episode, produce) -> bytes:
    with episode.lock:
        value = produce()
    return json_utf8(value)


def _list_field(body: dict[str, Any], key: str) -> list:
    value = body.get(key)
    if not isinstance(value, list):
        raise BadRequest(f"'{key}' must be a list")
    return value


def _parse_call(index: int, call: Any) -> tuple[str, str, dict[str, Any]]:
    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        raise BadRequest(f"call #{index} must be an object with a string 'name'")
    requestor = call.get("requestor", "assistant")
    if requestor not in ("assistant", "user"):
        raise BadRequest(f"call #{index}: requestor must be 'assistant' or 'user'")
    arguments = call.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise BadRequest(f"call #{index}: arguments must be an object")
    return requestor, call["name"], arguments
