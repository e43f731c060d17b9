"""One local worker process of `tau-harness run --workers N`.

It was forked from the driver (`tau_mcp.harness.distributed.spawner`), so the domain is already loaded
and the modules imported; it builds its own backend (the in-process server, or `--server`) and
`SimulationRunner`, then runs what the driver sends, many simulations at once on its own event
loop, and sends back each record as `SimulationRunner.simulate` returns it (its layout, which the
driver takes back with `SimulationRecord.trusted`). It never touches the results file. When
the driver's end of the socket closes, it cancels what it was running and ends.

Messages (JSON frames, `tau_mcp.harness.distributed.frames`), driver to worker: `run` {id, task, trial,
seed}, `grant` {lease}. Worker to driver: `ready`, `fatal` {message} (it cannot start), `done`
{id, record}, `failed` {id, config, message}, `acquire` {lease, provider}, `release` {lease}.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.distributed.frames import encode, read_frame
from tau_mcp.harness.errors import ConfigError
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import open_backend
from tau_mcp.servers.engine.domain import Domain
from tau_mcp.servers.engine.errors import EngineError

STOP_WAIT_S = 2.0


@dataclass(frozen=True)
class WorkerSetup:
    """What every worker needs; inherited through fork, never serialized."""

    domain: Domain
    config: RunConfig  # with save_to None: only the driver writes
    server: str | None
    token: str | None
    provider_limits: dict[str, int]


def worker_main(setup: WorkerSetup, sock: socket.socket) -> None:
    asyncio.run(_serve(setup, sock))


class DriverLink:
    """This worker's side of its socket: sending, and permits asked of the driver."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self._grants: dict[int, asyncio.Future[None]] = {}
        self._ids = itertools.count(1)

    async def send(self, message: dict[str, Any]) -> None:
        try:
            self.writer.write(encode(message))
            await self.writer.drain()
        except (ConnectionError, OSError):
            pass  # the driver is gone; the read loop sees it and ends this worker

    async def lease(self, provider: str) -> int:
        lease = next(self._ids)
        granted = asyncio.get_running_loop().create_future()
        self._grants[lease] = granted
        await self.send({"op": "acquire", "lease": lease, "provider": provider})
        await granted  # cancelled while waiting: the grant, when it comes, is given back
        return lease

    def granted(self, lease: int) -> None:
        future = self._grants.pop(lease, None)
        if future is not None and not future.done():
            future.set_result(None)
        else:
            asyncio.ensure_future(self.release(lease))

    async def release(self, lease: int) -> None:
        await self.send({"op": "release", "lease": lease})


class LeaseGate:
    """The request gate of a worker under `--provider-limit`: each request to a limited
    provider holds a permit from the driver, so the limit holds over all workers together."""

    def __init__(self, link: DriverLink, limits: dict[str, int]) -> None:
        self.link, self.limits = link, limits

    @asynccontextmanager
    async def gate(self, model: str) -> AsyncIterator[None]:
        from tau_mcp.harness.distributed.limits import provider_of

        provider = provider_of(model)
        if provider not in self.limits:
            yield
            return
        lease = await self.link.lease(provider)
        try:
            yield
        finally:
            await self.link.release(lease)


async def _runner(setup: WorkerSetup) -> SimulationRunner:
    domain = setup.domain
    backend = await open_backend(domain, setup.server, setup.token)
    try:
        return SimulationRunner(backend, domain, setup.config)
    except BaseException:
        await backend.close()
        raise


async def _simulate(runner: SimulationRunner, link: DriverLink, message: dict[str, Any]) -> None:
    reply: dict[str, Any] = {"id": message["id"]}
    try:
        task = runner.domain.task(message["task"])
        record = await runner.simulate(task, int(message["trial"]), int(message["seed"]))
        reply.update(op="done", record=record.layout())
    except (ConfigError, EngineError) as exc:  # the run cannot go on: no retry
        reply.update(op="failed", config=True, kind=type(exc).__name__, message=str(exc))
    except Exception as exc:  # noqa: BLE001 - anything else costs the driver a retry
        reply.update(op="failed", config=False, message=f"{type(exc).__name__}: {exc}")
    await link.send(reply)


async def _serve(setup: WorkerSetup, sock: socket.socket) -> None:
    from tau_mcp.conversation.llm import set_request_gate

    reader, writer = await asyncio.open_unix_connection(sock=sock)
    link = DriverLink(writer)
    try:
        runner = await _runner(setup)
    except (ConfigError, EngineError, InfrastructureError) as exc:
        await link.send({"op": "fatal", "message": str(exc)})
        return
    if setup.provider_limits:
        set_request_gate(LeaseGate(link, setup.provider_limits).gate)
    running: set[asyncio.Task[None]] = set()
    try:
        await link.send({"op": "ready"})
        while (message := await read_frame(reader)) is not None:
            if message.get("op") == "run":
                task = asyncio.create_task(_simulate(runner, link, message))
                running.add(task)
                task.add_done_callback(running.discard)
            elif message.get("op") == "grant":
                link.granted(int(message["lease"]))
    finally:
        for task in running:
            task.cancel()
        if running:
            await asyncio.wait(running, timeout=STOP_WAIT_S)
        with contextlib.suppress(Exception):
            await runner.backend.close()
