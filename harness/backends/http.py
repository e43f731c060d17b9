"""The backend over the server's HTTP routes and MCP endpoints.

With a URL it talks to a running `tau-server`; with an ASGI app it drives the app in-process (no
socket), which is what `tau-harness run` does by default. Either way every request goes through
the server's routes and middleware, and every tool call is a real MCP `tools/call`: sent by the
lean sessionless client (`tau_mcp.harness.backends.mcp_wire`) to servers that speak that protocol
revision, by the MCP SDK's client to older ones.
"""

from __future__ import annotations

import json
import uuid
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from tau_mcp.conversation.errors import ConfigError
from tau_mcp.conversation.tools import result_cost, result_fault
from tau_mcp.harness.backends import (
    EpisodeOptions,
    EpisodeRef,
    InfrastructureError,
    Side,
    ToolInfo,
    ToolResult,
    ToolSession,
)
from tau_mcp.harness.backends.exchange import (
    IN_PROCESS_BASE,
    IN_PROCESS_HOST,
    REQUEST_TIMEOUT_S,
    AsgiExchange,
    Exchange,
    HttpExchange,
    Reply,
    unreachable_reason,
)
from tau_mcp.harness.backends.mcp_wire import WireMcpSession, supports_modern

if TYPE_CHECKING:
    import httpx2

__all__ = ["HttpBackend", "IN_PROCESS_HOST", "in_process_backend", "remote_backend"]


class McpToolSession:
    """One MCP client session on one side of one episode."""

    def __init__(
        self,
        client: Any,
        tools: list[ToolInfo] | None = None,
        read_only_tools: set[str] | None = None,
    ) -> None:
        self._client = client
        self._tools: list[ToolInfo] | None = tools
        self._read_only_tools = read_only_tools

    @classmethod
    async def open(
        cls,
        url: str,
        client_factory,
        headers: dict[str, str],
        read_only_tools: set[str] | None = None,
        mode: str = "auto",
        tools: list[ToolInfo] | None = None,
    ) -> McpToolSession:
        """`read_only_tools`: the backend's set of tools the server marks read-only, filled in
        at the first listing. `mode`: "auto" probes the server's protocol era
        (`server/discover`); a modern version string adopts it without the probe. `tools`: the
        side's listing if already known."""
        from fastmcp import Client
        from fastmcp.client.transports import StreamableHttpTransport

        transport = StreamableHttpTransport(
            url, headers=headers, httpx_client_factory=client_factory
        )
        client = Client(transport, timeout=120, mode=mode)
        try:
            await client.__aenter__()
        except Exception as exc:  # noqa: BLE001 - any connection failure is infrastructure
            raise InfrastructureError(f"cannot open an MCP session at {url}: {exc}") from exc
        return cls(client, tools, read_only_tools)

    @property
    def protocol_version(self) -> str | None:
        return self._client.protocol_version

    async def list_tools(self) -> list[ToolInfo]:
        if self._tools is None:
            from tau_mcp.harness.backends.retry import note_read_only_tools

            listed = await self._client.list_tools()
            if self._read_only_tools is not None:
                note_read_only_tools(self._read_only_tools, listed)
            self._tools = [
                ToolInfo(t.name, t.description or "", dict(getattr(t, "input_schema", None) or {}))
                for t in listed
            ]
        return self._tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        try:
            # The raw MCP result: `call_tool` would re-list the tools to parse structured
            # output, which the conversation never uses (it shows the model the text).
            result = await self._client.call_tool_mcp(name, arguments)
        except Exception as exc:  # noqa: BLE001
            raise InfrastructureError(f"MCP call {name} failed: {exc}") from exc
        text = "".join(getattr(block, "text", "") for block in result.content or [])
        meta = getattr(result, "meta", None)
        return ToolResult(text, bool(result.is_error), result_cost(meta), result_fault(meta))

    async def close(self) -> None:
        try:
            await self._client.__aexit__(None, None, None)
        except Exception:  # noqa: BLE001 - closing a dead session is not worth failing a run
            pass


class HttpBackend:
    """Episodes on a tau-server, reached by URL or in-process through its ASGI app."""

    def __init__(
        self,
        base_url: str | None = None,
        *,
        app: Any = None,
        token: str | None = None,
        task_set: str | None = None,
    ) -> None:
        """`task_set`: the named task set the caller's domain is bound to; every episode is
        created from that set's task on the server (its own task of the id may differ)."""
        if (base_url is None) == (app is None):
            raise ValueError("give either a server URL or an app")
        self.app = app
        self.task_set = task_set
        self.base_url = (base_url or IN_PROCESS_BASE).rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._stack = AsyncExitStack()
        self.exchange: Exchange | None = None
        # Tools the server marks read-only: a call to one may be re-sent after a dropped
        # connection (see tau_mcp.harness.backends.retry).
        self.read_only_tools: set[str] = set()
        # Learnt once: every endpoint of a server speaks the same protocol revision (our own
        # app in-process speaks the sessionless one) and lists the same tools per
        # (domain, side), so later sessions neither probe nor list again.
        self._modern: bool | None = True if app is not None else None
        self._mcp_mode = "auto"
        self._tool_lists: dict[tuple[str, str, str | None], list[ToolInfo]] = {}

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> HttpBackend:
        if self.app is not None:
            lifespan = getattr(getattr(self.app, "router", None), "lifespan_context", None)
            if lifespan is not None:
                await self._stack.enter_async_context(lifespan(self.app))
            self.exchange = AsgiExchange(self.app, self.headers)
        else:
            self.exchange = HttpExchange(self.base_url, self.headers, self.read_only_tools)
            self._stack.push_async_callback(self.exchange.aclose)
        return self

    async def close(self) -> None:
        await self._stack.aclose()

    def _client_factory(
        self, headers=None, timeout=None, auth=None, **kwargs
    ) -> httpx2.AsyncClient:
        """httpx clients for the MCP SDK's transport (servers without the sessionless
        protocol revision)."""
        import httpx2

        merged = {**self.headers, **(headers or {})}
        if timeout is None:
            timeout = httpx2.Timeout(REQUEST_TIMEOUT_S)
        if self.app is not None:
            from fastmcp.utilities.asgi_transport import StreamingASGITransport

            return httpx2.AsyncClient(
                transport=StreamingASGITransport(self.app),
                base_url=self.base_url,
                headers=merged,
                timeout=timeout,
                auth=auth,
                **kwargs,
            )
        from tau_mcp.harness.backends.sdk_transport import SafeRetryTransport

        kwargs.setdefault("transport", SafeRetryTransport(self.read_only_tools))
        return httpx2.AsyncClient(
            base_url=self.base_url, headers=merged, timeout=timeout, auth=auth, **kwargs
        )

    # --- routes -----------------------------------------------------------------------------
    async def _request(
        self,
        method: str,
        path: str,
        body: Any = None,
        idempotent: bool = False,
        accept: tuple[int, ...] = (),
    ) -> Any:
        """One route call. `idempotent` marks a POST that may be re-sent after a dropped
        connection; statuses in `accept` are answers, not errors (they return None)."""
        assert self.exchange is not None, "backend not started"
        content = None if body is None else json.dumps(body).encode()
        headers = _JSON_BODY if content is not None else ()
        reply = await self.exchange.send(method, path, content, headers, resend_safe=idempotent)
        if reply.status in accept:
            return None
        if reply.status >= 400:
            raise InfrastructureError(
                f"{method} {path} answered {reply.status}: {_error_message(reply.body)}"
            )
        if reply.status == 204 or not reply.body:
            return None
        try:
            return json.loads(reply.body)
        except ValueError as exc:
            raise InfrastructureError(f"{method} {path} answered non-JSON: {exc}") from exc

    async def health(self) -> dict[str, Any]:
        return await self._request("GET", "/health")

    async def create_episode(
        self, domain: str, task_id: str | None, options: EpisodeOptions | None = None
    ) -> EpisodeRef:
        # A fresh id chosen here makes the POST idempotent: if a dropped connection makes the
        # transport send it twice, the second answer is 409 "already exists" for our episode.
        episode_id = uuid.uuid4().hex
        body = {"task_id": task_id, "episode_id": episode_id}
        if options is not None:
            body |= options.body()
        if self.task_set is not None:
            body["task_set"] = self.task_set
        data = await self._request(
            "POST",
            f"/{domain}/episodes",
            body,
            idempotent=True,
            accept=(409,),
        )
        if self.task_set is not None and data is not None and data.get("task_set") is None:
            raise ConfigError(
                f"the tau-server at {self.base_url} does not take a task set with an episode "
                f"(it is older than this harness), so it would start task '{task_id}' from its "
                f"own tasks, not from {self.task_set}'s; upgrade it, or run without "
                "--server or without --task-set-name"
            )
        config = options.retrieval_config if options is not None else None
        if data is None:
            base = f"/{domain}/episodes/{episode_id}"
            return EpisodeRef(domain, episode_id, f"{base}/agent/mcp", f"{base}/user/mcp", config)
        return EpisodeRef(domain, data["episode_id"], data["agent_mcp"], data["user_mcp"], config)

    async def open_session(self, ref: EpisodeRef, side: Side) -> ToolSession:
        assert self.exchange is not None, "backend not started"
        path = ref.agent_mcp if side == "agent" else ref.user_mcp
        if path.startswith("http"):
            path = "/" + path.split("://", 1)[1].partition("/")[2]
        # Listings are cached per domain, side and retrieval config (the agent's tools differ).
        key = (ref.domain, side, ref.retrieval_config)
        if self._modern is None:
            self._modern = await supports_modern(self.exchange, path)
        if self._modern:
            session: ToolSession = WireMcpSession(
                self.exchange, path, self._tool_lists.get(key), self.read_only_tools
            )
        else:
            session = await self._sdk_session(path, key)
        if key not in self._tool_lists:
            self._tool_lists[key] = await session.list_tools()
        return session

    async def _sdk_session(self, path: str, key: tuple[str, str, str | None]) -> McpToolSession:
        """A session through the MCP SDK client, for servers older than the sessionless
        protocol revision."""
        session = await McpToolSession.open(
            f"{self.base_url}/{path.lstrip('/')}",
            self._client_factory,
            self.headers,
            self.read_only_tools,
            self._mcp_mode,
            self._tool_lists.get(key),
        )
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if self._mcp_mode == "auto" and session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._mcp_mode = session.protocol_version
        return session

    def _episode_path(self, ref: EpisodeRef) -> str:
        return f"/{ref.domain}/episodes/{ref.episode_id}"

    async def hashes(self, ref: EpisodeRef) -> dict[str, str | None]:
        return await self._request("GET", f"{self._episode_path(ref)}/hash")

    async def assertions(self, ref: EpisodeRef, assertions: list[dict]) -> list[dict]:
        data = await self._request(  # assertions only read: safe to re-send
            "POST",
            f"{self._episode_path(ref)}/assertions",
            {"assertions": assertions},
            idempotent=True,
        )
        return data["results"]

    async def replay(
        self, ref: EpisodeRef, calls: list[dict], only_mutating: bool
    ) -> list[dict | None]:
        body = {"calls": calls, "only_mutating": only_mutating}
        data = await self._request("POST", f"{self._episode_path(ref)}/replay", body)
        return data["outputs"]

    async def state(self, ref: EpisodeRef) -> dict[str, Any]:
        return await self._request("GET", f"{self._episode_path(ref)}/state")

    async def changed_records(self, ref: EpisodeRef) -> dict[str, Any] | None:
        # 404/405 from a server older than the route (an unknown episode is a 404 too: the
        # caller then reads the state, which says so).
        return await self._request("GET", f"{self._episode_path(ref)}/changes", accept=(404, 405))

    async def delete_episode(self, ref: EpisodeRef) -> None:
        # 404: already gone (a re-sent DELETE whose first copy was applied).
        await self._request("DELETE", self._episode_path(ref), accept=(404,))


_JSON_BODY = ((b"content-type", b"application/json"),)


def _error_message(body: bytes) -> str:
    try:
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return body[:300].decode(errors="replace")
    if isinstance(value, dict) and "error" in value:
        return str(value["error"])
    return body[:300].decode(errors="replace")


async def in_process_backend(domains: dict, token: str | None = None) -> HttpBackend:
    """Build the server app around already-loaded domains and drive it with no socket."""
    try:
        from tau_mcp.servers.app import ServerSettings, create_app
    except ImportError as exc:
        raise InfrastructureError(f"the server app is not available ({exc})") from exc
    from tau_mcp.servers.guards import LOOPBACK_HOSTS

    settings = ServerSettings(
        token=token,
        allowed_hosts=(*LOOPBACK_HOSTS, IN_PROCESS_HOST),
        warm=False,
        lazy_mcp=True,  # our client lists and calls tools on the short path: no FastMCP needed
        network_guards=False,  # no socket: nothing but this process can send it a request
    )
    app = create_app(domains, settings=settings)
    return await HttpBackend(app=app, token=token).start()


async def remote_backend(
    url: str, token: str | None = None, domain: str | None = None, task_set: str | None = None
) -> HttpBackend:
    """A backend on a running server, checked first so a wrong URL, a missing token or a domain
    the server does not serve is one clear error instead of a run of failed simulations.
    `task_set`: every episode starts from that named set's task (see `HttpBackend`)."""
    backend = await HttpBackend(url, token=token, task_set=task_set).start()
    assert backend.exchange is not None
    try:
        reply = await backend.exchange.send("GET", "/health")
    except InfrastructureError as exc:
        await backend.close()
        reason = unreachable_reason(exc.__cause__ or exc)
        raise InfrastructureError(f"cannot reach tau-server at {url} ({reason})") from None
    if reply.status == 401:
        await backend.close()
        raise InfrastructureError(f"tau-server at {url} wants a token (--server-token)")
    served = _served_domains(reply) if reply.status == 200 else None
    if served is None:
        await backend.close()
        raise InfrastructureError(f"{url} is not a tau-server (GET /health: {reply.status})")
    if domain is not None and domain not in served:
        await backend.close()
        raise InfrastructureError(
            f"tau-server at {url} does not serve '{domain}' (serves: {', '.join(served)})"
        )
    return backend


def _served_domains(reply: Reply) -> list[str] | None:
    try:
        value = json.loads(reply.body)
    except (ValueError, UnicodeDecodeError):
        return None
    domains = value.get("domains") if isinstance(value, dict) else None
    return domains if isinstance(domains, list) else None
