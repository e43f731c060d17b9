"""Eval Protocol compatibility: `/{domain}/mcp` plus `/{domain}/control/*`.

Eval Protocol's client opens one MCP session per dataset row with the legacy `initialize`
handshake and puts its own session id, the row's config and a seed in
`clientInfo._extra`. The MCP server drops unknown clientInfo fields, so a small gateway reads
them from the raw `initialize` body and remembers which EP session the transport session id
(assigned in the response's `Mcp-Session-Id`) belongs to. The EP session id is the episode id.
Control routes carry the EP session id in the `mcp-session-id` header.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from tau_mcp.servers.auth import send_json_error
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.episode import Episode, EpisodeStore
from tau_mcp.servers.engine.errors import EngineError, NotFound, UnknownEpisode
from tau_mcp.servers.engine.faults import FaultPlan
from tau_mcp.servers.engine.ids import ID_RULE, is_safe_episode_id
from tau_mcp.servers.engine.variants import KWARGS_OPTION, NAME_OPTION, Variant
from tau_mcp.servers.guards import replay_body
from tau_mcp.servers.integrations.ep_grade import SessionGrader
from tau_mcp.servers.limits import name_field, options_field
from tau_mcp.servers.mcp_apps import McpApps

SESSION_HEADER = "mcp-session-id"
_MAX_TRANSPORTS = 100_000
# A live session whose open MCP connections have all been silent this long may be taken over by a
# new `initialize` for the same task (a client that died without closing its connection).
TAKEOVER_IDLE_SECONDS = 60.0


class EpError(EngineError):
    """A malformed Eval Protocol request (missing header, bad session config)."""


class SessionConflict(EpError):
    """An `initialize` that would swap or share the episode of a live session."""

    status = 409


@dataclass
class EpSession:
    domain: str
    session_id: str
    task_id: str | None
    variant: Variant | None = None  # the session's retrieval config, for domains with them
    faults: FaultPlan | None = None  # the faults the session's agent calls meet
    ended: bool = False
    reported_reward: float = 0.0
    # Transport (`Mcp-Session-Id`) ids of this session's MCP connections not yet closed.
    transports: set[str] = field(default_factory=set)
    last_used: float = field(default_factory=time.monotonic)


def initialize_extra(body: bytes) -> dict[str, Any] | None:
    """`clientInfo._extra` of a JSON-RPC `initialize` request ({} when it has none); None when
    the body is not an initialize request."""
    try:
        message = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if isinstance(message, list):
        message = next(
            (m for m in message if isinstance(m, dict) and m.get("method") == "initialize"), None
        )
    if not isinstance(message, dict) or message.get("method") != "initialize":
        return None
    params = message.get("params")
    client = params.get("clientInfo") if isinstance(params, dict) else None
    extra = client.get("_extra") if isinstance(client, dict) else None
    return extra if isinstance(extra, dict) else {}


class EvalProtocolBridge:
    """Tracks EP sessions and serves the EP gateway and control routes for every domain."""

    def __init__(
        self,
        store: EpisodeStore,
        mcp_apps: McpApps,
        default_episode: Callable[[str], Episode],
        resolve_variant: Callable[[Domain, str | None, dict[str, Any] | None], Variant | None],
        resolve_faults: Callable[[dict[str, Any], str], FaultPlan | None] | None = None,
    ) -> None:
        """`mcp_apps` are keyed by (domain, variant name or None); `resolve_variant` picks a
        session's retrieval config from its `config` (the server's default when it names
        none), `resolve_faults` its faults (`faults`, `faults_profile` in the config)."""
        self.store = store
        self.mcp_apps = mcp_apps
        self.default_episode = default_episode
        self.resolve_variant = resolve_variant
        self.resolve_faults = resolve_faults
        # Oldest first; bounded like the episode store, and a deleted episode's session goes
        # with it, so a long soak of EP rollouts does not accumulate sessions.
        self.sessions: OrderedDict[tuple[str, str], EpSession] = OrderedDict()
        self.transports: OrderedDict[str, tuple[str, str]] = OrderedDict()
        # Connections whose session a newer connection took over: refused, never rerouted.
        self.revoked: OrderedDict[str, str] = OrderedDict()
        self.grades = SessionGrader()

    # --- sessions ---------------------------------------------------------------------------
    def open_session(self, domain: str, extra: dict[str, Any]) -> Episode:
        """Start (or resume) the episode of an EP session from its initialize `_extra`."""
        session_id = extra.get("session_id")
        if not is_safe_episode_id(session_id):
            raise EpError(f"clientInfo._extra.session_id must be {ID_RULE}")
        config = extra.get("config") or {}
        if not isinstance(config, dict):
            raise EpError("clientInfo._extra.config must be an object")
        wanted_domain = config.get("domain")
        if wanted_domain not in (None, domain):
            raise EpError(
                f"session config names domain '{wanted_domain}' but this endpoint serves '{domain}'"
            )
        task_id = config.get("task_id")
        if task_id is not None and not isinstance(task_id, str):
            task_id = str(task_id)
        variant = self._session_variant(domain, config)
        faults = self._session_faults(config, extra.get("seed"))
        key = (domain, session_id)
        session = self.sessions.get(key)
        episode = self.store.find(domain, session_id)
        if session is None or session.ended or episode is None:
            if session is not None:
                self._forget_transports(session)
            episode = self.store.create(
                domain, task_id, session_id, replace=True, variant=variant, faults=faults
            )
            self.sessions[key] = EpSession(domain, session_id, task_id, variant, faults)
            self.sessions.move_to_end(key)
            while len(self.sessions) > self.store.capacity:
                _, oldest = self.sessions.popitem(last=False)
                self._forget_transports(oldest)
            return episode
        self._check_reconnect(session, task_id)
        return episode

    def _session_variant(self, domain: str, config: dict[str, Any]) -> Variant | None:
        """The session's retrieval config, from its row config (bounded like the episode
        route's fields, `tau_mcp.servers.limits`)."""
        name = name_field(config, NAME_OPTION)
        kwargs = options_field(config, KWARGS_OPTION)
        return self.resolve_variant(self.store.domain(domain), name, kwargs)

    def _session_faults(self, config: dict[str, Any], seed: Any) -> FaultPlan | None:
        """The session's faults, from its row config; EP's seed keys their draws unless the
        config's plan names a seed of its own."""
        if self.resolve_faults is None:
            return None
        plan = self.resolve_faults(config, "config.faults")
        given = config.get("faults")
        seeded = isinstance(given, dict) and "seed" in given or "seed=" in str(given or "")
        if plan is not None and not seeded and isinstance(seed, int) and not isinstance(seed, bool):
            plan = plan.for_episode(seed, plan.trial)
        return plan

    def _check_reconnect(self, session: EpSession, task_id: str | None) -> None:
        """A new `initialize` for a live session is a reconnect: allowed for the same task once
        the session's earlier connections are closed (EP closes before it re-initializes) or
        silent for TAKEOVER_IDLE_SECONDS; anything else is refused, never silently swapped."""
        end_it = (
            f"end it first (POST /{session.domain}/control/reset_session with header "
            f"mcp-session-id: {session.session_id}) or use another session id"
        )
        if session.task_id != task_id:
            raise SessionConflict(
                f"Eval Protocol session '{session.session_id}' is live on task "
                f"{session.task_id!r} and will not be switched to task {task_id!r}: {end_it}"
            )
        idle = time.monotonic() - session.last_used
        if session.transports and idle < TAKEOVER_IDLE_SECONDS:
            raise SessionConflict(
                f"Eval Protocol session '{session.session_id}' is in use by another open MCP "
                f"connection: close that connection (HTTP DELETE) or {end_it}"
            )
        self._forget_transports(session)  # the old connections, if any, lose the episode
        session.last_used = time.monotonic()

    def forget(self, domain: str, episode_id: str) -> None:
        """Drop the EP session whose episode was deleted (its id may start afresh later)."""
        session = self.sessions.pop((domain, episode_id), None)
        if session is not None:
            self._forget_transports(session)

    def _forget_transports(self, session: EpSession) -> None:
        """Detach the session's open connections: later requests on them are refused (never
        rerouted to the default episode)."""
        for transport_id in session.transports:
            self.transports.pop(transport_id, None)
            self.revoked[transport_id] = session.session_id
        session.transports.clear()
        while len(self.revoked) > _MAX_TRANSPORTS:
            self.revoked.popitem(last=False)

    def session_episode(self, domain: str, session_id: str) -> Episode:
        """The live episode of an EP session; an ended session starts a fresh one."""
        session = self.sessions.get((domain, session_id))
        if session is None:
            raise UnknownEpisode(
                f"unknown Eval Protocol session '{session_id}' in domain '{domain}'"
            )
        episode = self.store.find(domain, session_id)
        if session.ended or episode is None:
            episode = self.store.create(
                domain,
                session.task_id,
                session_id,
                replace=True,
                variant=session.variant,
                faults=session.faults,
            )
            session.ended = False
            session.reported_reward = 0.0
        return episode

    def _remember_transport(self, transport_id: str, domain: str, session_id: str) -> None:
        self.transports[transport_id] = (domain, session_id)
        session = self.sessions.get((domain, session_id))
        if session is not None:
            session.transports.add(transport_id)
        while len(self.transports) > _MAX_TRANSPORTS:
            old_id, owner = self.transports.popitem(last=False)
            self._close_transport(old_id, owner)

    def _close_transport(self, transport_id: str, owner: tuple[str, str] | None) -> None:
        self.transports.pop(transport_id, None)
        session = self.sessions.get(owner) if owner is not None else None
        if session is not None:
            session.transports.discard(transport_id)

    # --- the MCP gateway --------------------------------------------------------------------
    async def gateway(self, scope: Scope, receive: Receive, send: Send) -> None:
        domain = scope["path_params"]["domain"]
        if domain not in self.store.domains:
            await send_json_error(send, 404, f"unknown domain '{domain}'")
            return
        transport_id = _header(scope, SESSION_HEADER)
        opened_session: str | None = None
        episode: Episode | None = None
        try:
            if scope["method"] == "POST":
                body = await _read_body(receive)
                receive = replay_body(body, receive)
                extra = initialize_extra(body)
                if extra is not None and extra.get("session_id") is not None:
                    episode = self.open_session(domain, extra)
                    opened_session = episode.id
            if episode is None:
                episode = self._episode_for_transport(
                    domain, transport_id, scope["method"] == "POST"
                )
        except EngineError as exc:
            await send_json_error(send, exc.status, str(exc))
            return

        if opened_session is not None:
            inner_send = send

            async def send(message: Message) -> None:  # noqa: F811 - wraps the original
                if message["type"] == "http.response.start":
                    for name, value in message.get("headers", []):
                        if name.lower() == SESSION_HEADER.encode():
                            self._remember_transport(value.decode(), domain, opened_session)
                await inner_send(message)

        if scope["method"] == "DELETE" and transport_id:
            self._close_transport(transport_id, self.transports.get(transport_id))
        scope = {**scope, "tau.episode": episode, "path": "/mcp", "root_path": ""}
        variant = episode.variant if episode is not None else None
        key = (domain, variant.name if variant is not None else None)
        if not self.mcp_apps.knows(key):  # an episode without a config where configs exist
            key = (domain, self.store.domain(domain).spec.tool_variant)
        app = await self.mcp_apps.get(key)
        await app(scope, receive, send)

    def _episode_for_transport(
        self, domain: str, transport_id: str | None, use: bool
    ) -> Episode | None:
        """The episode a transport session acts on. Only a POST (`use`) may restart an ended
        session: closing the transport (DELETE) must leave the final state readable."""
        session_id = None
        if transport_id and transport_id in self.revoked:
            if not use:  # closing a connection that lost its session is fine
                return None
            raise SessionConflict(
                f"this MCP connection no longer acts on Eval Protocol session "
                f"'{self.revoked[transport_id]}': a newer connection took it over or its "
                "episode was deleted; open a new session"
            )
        if transport_id:
            owner = self.transports.get(transport_id)
            if owner is not None and owner[0] == domain:
                session_id = owner[1]
            elif (domain, transport_id) in self.sessions:  # a client sending EP's own id
                session_id = transport_id
        if session_id is None:
            return self.default_episode(domain) if use else None
        session = self.sessions.get((domain, session_id))
        if session is not None:
            session.last_used = time.monotonic()
        if use:
            return self.session_episode(domain, session_id)
        return self.store.find(domain, session_id)

    # --- control routes ---------------------------------------------------------------------
    def _control_session(self, request: Request) -> tuple[EpSession, Episode | None]:
        domain = request.path_params["domain"]
        if domain not in self.store.domains:
            raise NotFound(f"unknown domain '{domain}'")
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            raise EpError("missing mcp-session-id header (the Eval Protocol session id)")
        session = self.sessions.get((domain, session_id))
        if session is None:
            raise UnknownEpisode(
                f"unknown Eval Protocol session '{session_id}' in domain '{domain}'"
            )
        return session, self.store.find(domain, session_id)

    async def initial_state(self, request: Request) -> JSONResponse:
        session, episode = self._control_session(request)
        task = episode.task if episode is not None else None
        return JSONResponse(
            {
                "observation": (task.ticket if task is not None and task.ticket else "") or "",
                "session_id": session.session_id,
                "episode_id": session.session_id,
                "domain": session.domain,
                "task_id": session.task_id,
                "state_url": f"/{session.domain}/episodes/{session.session_id}/state",
            }
        )

    async def reward(self, request: Request) -> JSONResponse:
        session, episode = self._control_session(request)
        # `reward` is the change since the last report (EP adds them up); `grade` is our whole
        # grade of the session so far (see servers/integrations/ep_grade.py).
        grade = await self.grades.grade(episode) if episode is not None else None
        db_check = (grade or {}).get("db_check") or {}
        current = grade["reward"] if grade is not None else 0.0
        step = current - session.reported_reward
        session.reported_reward = current
        return JSONResponse(
            {
                "reward": step,
                "db_reward": db_check.get("db_reward"),
                "step_count": episode.calls if episode is not None else 0,
                "grade": grade,
            }
        )

    async def status(self, request: Request) -> JSONResponse:
        session, episode = self._control_session(request)
        return JSONResponse(
            {
                "terminated": session.ended,
                "truncated": False,
                "ended": session.ended,
                "step_count": episode.calls if episode is not None else 0,
                "episode_id": session.session_id,
                "task_id": session.task_id,
            }
        )

    async def reset_session(self, request: Request) -> JSONResponse:
        session, _ = self._control_session(request)
        session.ended = True
        return JSONResponse(
            {
                "message": "session ended; its final state stays readable until the session is used again",
                "state_url": f"/{session.domain}/episodes/{session.session_id}/state",
            }
        )


def _header(scope: Scope, name: str) -> str | None:
    wanted = name.encode()
    for key, value in scope["headers"]:
        if key == wanted:
            return value.decode("latin-1")
    return None


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)
