"""The FastMCP HTTP apps behind a server's MCP endpoints, built at start or on first use.

A `tau-server` process builds every app before it takes traffic. An in-process server driven by
the harness builds none until a request needs one: its clients list and call tools, which the
short path answers (`tau_mcp.servers.fast_calls`), so a run never pays for importing FastMCP and the MCP
server stack (over a second of CPU) unless some request really needs them.

An app's lifespan (its MCP session manager and task group) must be entered and left by the same
task, so apps built on first use enter theirs in a keeper task that lives in the server's own
lifespan and leaves them when the server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio

Builder = Callable[[], Any]  # returns an ASGI app with `router.lifespan_context`


class McpApps:
    """ASGI apps by key (e.g. (domain, side)); each built by its builder once."""

    def __init__(
        self,
        builders: dict[Hashable, Builder],
        *,
        lazy: bool,
        on_demand: dict[Hashable, Builder] | None = None,
    ) -> None:
        """`on_demand` apps are built on first use even when not `lazy` (e.g. one app per
        retrieval config, most of which a server never serves)."""
        self._builders = {**builders, **(on_demand or {})}
        self._apps: dict[Hashable, Any] = {}
        self.lazy = lazy
        self._start_holder: Callable[[Any], Any] | None = None
        self._lock: anyio.Lock | None = None
        if not lazy:
            for key, build in builders.items():
                self._apps[key] = build()

    def knows(self, key: Hashable) -> bool:
        return key in self._builders

    def built(self) -> list[Any]:
        return list(self._apps.values())

    async def get(self, key: Hashable) -> Any | None:
        """The app for `key` (built and started now if needed), or None for an unknown key."""
        app = self._apps.get(key)
        if app is not None or key not in self._builders:
            return app
        if self._start_holder is None:
            raise RuntimeError("the server's lifespan is not running")
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            app = self._apps.get(key)
            if app is None:
                app = self._builders[key]()
                await self._start_holder(app)
                self._apps[key] = app
        return app

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Start every built app now; apps built later start in the keeper task."""
        async with AsyncExitStack() as stack:
            for app in self._apps.values():
                await stack.enter_async_context(app.router.lifespan_context(app))
            keeper = await stack.enter_async_context(anyio.create_task_group())
            stopping = anyio.Event()
            stack.callback(stopping.set)  # runs first on exit, so the keeper's holders return

            async def hold(app: Any, *, task_status=anyio.TASK_STATUS_IGNORED) -> None:
                async with app.router.lifespan_context(app):
                    task_status.started()
                    await stopping.wait()

            self._start_holder = lambda app: keeper.start(hold, app)
            try:
                yield
            finally:
                self._start_holder = None
