"""The backend over the server's HTTP routes and MCP endpoints.

With a URL it talks to a running `tau-server`; with an ASGI app it drives the app in-process
(no socket) through fastmcp's streaming ASGI transport, which is what `tau-harness run` does by
default. Either way every tool call is a real MCP `tools/call`.
"""

from __future__ import annotations

import uuid
from contextlib import AsyncExitStack
from typing import Any

import httpx2
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from harness.backends import EpisodeRef, InfrastructureError, Side, ToolInfo, ToolResult
from harness.backends.retry import IDEMPOTENT, SafeRetryTransport, note_read_only_tools

IN_PROCESS_HOST = "tau.local"
IN_PROCESS_BASE = f"http://{IN_PROCESS_HOST}"


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
        return ToolResult(text, bool(result.is_error))

    async def close(self) -> None:
        try:
            await self._client.__aexit__(None, None, None)
        except Exception:  # noqa: BLE001 - closing a dead session is not worth failing a run
            pass


class HttpBackend:
    """Episodes on a tau-server, reached by URL or in-process through its ASGI app."""

    def __init__(
        self, base_url: str | None = None, *, app: Any = None, token: str | None = None
    ) -> None:
        if (base_url is None) == (app is None):
            raise ValueError("give either a server URL or an app")
        self.app = app
        self.base_url = (base_url or IN_PROCESS_BASE).rstrip("/")
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._stack = AsyncExitStack()
        self._http: httpx2.AsyncClient | None = None
        # Tools the server marks read-only: a call to one may be re-sent after a dropped
        # connection (see harness.backends.retry).
        self.read_only_tools: set[str] = set()
        # Learnt from the first MCP session: every episode of a server speaks the same protocol
        # era and lists the same tools per (domain, side), so later sessions skip the
        # `server/discover` probe and the `tools/list` round trip.
        self._mcp_mode = "auto"
        self._tool_lists: dict[tuple[str, str], list[ToolInfo]] = {}

    # --- lifecycle --------------------------------------------------------------------------
    async def start(self) -> HttpBackend:
        if self.app is not None:
            lifespan = getattr(getattr(self.app, "router", None), "lifespan_context", None)
            if lifespan is not None:
                await self._stack.enter_async_context(lifespan(self.app))
        self._http = await self._stack.enter_async_context(
            self._client_factory(timeout=httpx2.Timeout(120.0))
        )
        return self

    async def close(self) -> None:
        await self._stack.aclose()

    def _client_factory(
        self, headers=None, timeout=None, auth=None, **kwargs
    ) -> httpx2.AsyncClient:
        merged = {**self.headers, **(headers or {})}
        if timeout is None:
            timeout = httpx2.Timeout(120.0)
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
        assert self._http is not None, "backend not started"
        extensions = {IDEMPOTENT: True} if idempotent else None
        try:
            response = await self._http.request(method, path, json=body, extensions=extensions)
        except httpx2.HTTPError as exc:
            raise InfrastructureError(f"{method} {path} failed: {exc}") from exc
        if response.status_code in accept:
            return None
        if response.status_code >= 400:
            try:
                message = response.json().get("error", response.text)
            except ValueError:
                message = response.text
            raise InfrastructureError(f"{method} {path} answered {response.status_code}: {message}")
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    async def health(self) -> dict[str, Any]:
        return await self._request("GET", "/health")

    async def create_episode(self, domain: str, task_id: str | None) -> EpisodeRef:
        # A fresh id chosen here makes the POST idempotent: if a dropped connection makes the
        # transport send it twice, the second answer is 409 "already exists" for our episode.
        episode_id = uuid.uuid4().hex
        data = await self._request(
            "POST",
            f"/{domain}/episodes",
            {"task_id": task_id, "episode_id": episode_id},
            idempotent=True,
            accept=(409,),
        )
        if data is None:
            base = f"/{domain}/episodes/{episode_id}"
            return EpisodeRef(domain, episode_id, f"{base}/agent/mcp", f"{base}/user/mcp")
        return EpisodeRef(domain, data["episode_id"], data["agent_mcp"], data["user_mcp"])

    async def open_session(self, ref: EpisodeRef, side: Side) -> McpToolSession:
        path = ref.agent_mcp if side == "agent" else ref.user_mcp
        url = path if path.startswith("http") else f"{self.base_url}/{path.lstrip('/')}"
        key = (ref.domain, side)
        session = await McpToolSession.open(
            url,
            self._client_factory,
            self.headers,
            self.read_only_tools,
            self._mcp_mode,
            self._tool_lists.get(key),
        )
        if self._mcp_mode == "auto" and session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            self._mcp_mode = session.protocol_version
        if key not in self._tool_lists:
            self._tool_lists[key] = await session.list_tools()
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

    async def delete_episode(self, ref: EpisodeRef) -> None:
        # 404: already gone (a re-sent DELETE whose first copy was applied).
        await self._request("DELETE", self._episode_path(ref), accept=(404,))


async def in_process_backend(domains: dict, token: str | None = None) -> HttpBackend:
    """Build the server app around already-loaded domains and drive it with no socket."""
    try:
        from servers.app import ServerSettings, create_app
    except ImportError as exc:
        raise InfrastructureError(f"the server app is not available ({exc})") from exc
    from servers.guards import LOOPBACK_HOSTS

    settings = ServerSettings(
        token=token, allowed_hosts=(*LOOPBACK_HOSTS, IN_PROCESS_HOST), warm=False
    )
    app = create_app(domains, settings=settings)
    return await HttpBackend(app=app, token=token).start()


async def remote_backend(
    url: str, token: str | None = None, domain: str | None = None
) -> HttpBackend:
    """A backend on a running server, checked first so a wrong URL, a missing token or a domain
    the server does not serve is one clear error instead of a run of failed simulations."""
    backend = await HttpBackend(url, token=token).start()
    try:
        response = await backend._http.get(f"{backend.base_url}/health")
    except httpx2.HTTPError as exc:
        await backend.close()
        raise InfrastructureError(f"cannot reach tau-server at {url} ({exc})") from None
    if response.status_code == 401:
        await backend.close()
        raise InfrastructureError(f"tau-server at {url} wants a token (--server-token)")
    served = (response.json() or {}).get("domains", []) if response.status_code == 200 else None
    if served is None:
        await backend.close()
        raise InfrastructureError(
            f"{url} is not a tau-server (GET /health: {response.status_code})"
        )
    if domain is not None and domain not in served:
        await backend.close()
        raise InfrastructureError(
            f"tau-server at {url} does not serve '{domain}' (serves: {', '.join(served)})"
        )
    return backend
