"""`tau-harness run --workers N`: a run's simulations in N local worker processes.

The driver (the `tau-harness run` process) keeps everything a local run has, as with Ray: task
selection, seeds, `--max-concurrency` (the total in flight over all workers), the progress bar,
the summary, the exit code and the results file (lock, journal, atomic rewrites, resume), which
only it writes. Workers (`tau_mcp.harness.distributed.process_worker`) are forked from a copy of the
driver taken before its event loop started (`tau_mcp.harness.distributed.spawner`), so they start with
the domain loaded and litellm imported. Each simulation goes to the least loaded worker over its
socket; its record comes back as JSON, read on the driver's event loop (no polling, no threads).

A worker that dies fails only the simulations it was running: they are retried on the other
workers under `--max-retries` while a replacement is forked, and recorded as infrastructure
errors when retries run out, as in a local run. Workers that keep dying before any simulation
finishes are not replaced for ever: with none left, the remaining simulations are recorded as
infrastructure errors and the run ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.distributed.frames import encode, read_frame
from tau_mcp.harness.distributed.limits import LocalProviderLimits
from tau_mcp.harness.distributed.process_worker import WorkerSetup, worker_main
from tau_mcp.harness.distributed.spawner import Spawner
from tau_mcp.harness.errors import ConfigError, run_stop
from tau_mcp.harness.results import SimulationRecord
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.servers.engine.tasks import Task

FRAME_LIMIT = 1 << 20  # stream buffer; frames larger than this are still read whole


def cpu_count() -> int:
    """CPUs this process may run on (its affinity mask), else the machine's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def preload(domain: Any) -> None:
    """Pay once, before forking, what each worker would otherwise pay at its first simulation:
    the domain's canonical forms (for grading hashes) and the in-process server's modules."""
    import tau_mcp.harness.backends.http  # noqa: F401
    import tau_mcp.servers.app  # noqa: F401

    domain.warm()


class NoBackend:
    """The driver's backend when workers run the simulations: it must never be used."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the driver runs no simulations (backend.{name} called)")


class WorkerLost(Exception):
    """The worker running a simulation ended before sending its record."""


class WorkerFailed(Exception):
    def __init__(self, message: str, config: bool, kind: str | None = None) -> None:
        super().__init__(message)
        self.config, self.kind = config, kind


class WorkerLink:
    """The driver's end of one worker's socket: requests out, records and permits in."""

    def __init__(self, pool: ProcessPool, pid: int, sock: socket.socket) -> None:
        self.pool, self.pid, self.sock = pool, pid, sock
        self.pending: dict[int, asyncio.Future[SimulationRecord]] = {}
        self.leases: dict[int, str] = {}
        self.granting: set[asyncio.Task[None]] = set()
        self.ready = False
        self.alive = True
        self.fatal: str | None = None
        #: done once the worker said it is ready, or ended before that
        self.settled: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._ids = itertools.count(1)
        self.writer: asyncio.StreamWriter | None = None
        self.reading: asyncio.Task[None] | None = None

    async def open(self) -> None:
        reader, self.writer = await asyncio.open_unix_connection(sock=self.sock, limit=FRAME_LIMIT)
        self.reading = asyncio.create_task(self._read(reader))

    def _send(self, message: dict[str, Any]) -> None:
        if self.alive and self.writer is not None and not self.writer.is_closing():
            self.writer.write(encode(message))

    async def run(self, task_id: str, trial: int, seed: int) -> SimulationRecord:
        if not self.alive:
            raise WorkerLost(f"worker process {self.pid} ended")
        request = next(self._ids)
        future = asyncio.get_running_loop().create_future()
        self.pending[request] = future
        try:
            self._send({"op": "run", "id": request, "task": task_id, "trial": trial, "seed": seed})
            return await future
        finally:
            self.pending.pop(request, None)

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while (message := await read_frame(reader)) is not None:
                self._handle(message)
        finally:
            self._lost()

    def _handle(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "ready":
            self.ready = True
            _settle(self.settled)
            self.pool.changed()
        elif op == "fatal":
            self.fatal = str(message.get("message"))
        elif op in ("done", "failed"):
            future = self.pending.get(int(message["id"]))
            if future is None or future.done():
                return
            if op == "done":
                future.set_result(SimulationRecord.trusted(message["record"]))
            else:
                future.set_exception(
                    WorkerFailed(
                        str(message.get("message")),
                        bool(message.get("config")),
                        message.get("kind"),
                    )
                )
        elif op == "acquire" and self.pool.limits is not None:
            task = asyncio.create_task(self._grant(int(message["lease"]), message["provider"]))
            self.granting.add(task)
            task.add_done_callback(self.granting.discard)
        elif op == "release":
            provider = self.leases.pop(int(message["lease"]), None)
            if provider is not None and self.pool.limits is not None:
                self.pool.limits.release(provider)

    async def _grant(self, lease: int, provider: str) -> None:
        limits = self.pool.limits
        assert limits is not None
        if not await limits.acquire(provider):
            self._send({"op": "grant", "lease": lease})  # no limit on it after all
            return
        if not self.alive:
            limits.release(provider)
            return
        self.leases[lease] = provider
        self._send({"op": "grant", "lease": lease})

    def _lost(self) -> None:
        """The worker ended (or its socket closed): fail what it was running, give back its
        permits, and let the pool replace it."""
        if not self.alive:
            return
        self.alive = False
        why = f": {self.fatal}" if self.fatal else " (killed or crashed)"
        error = WorkerLost(f"worker process {self.pid} ended{why}")
        for future in self.pending.values():
            if not future.done():
                future.set_exception(error)
        for task in self.granting:
            task.cancel()
        if self.pool.limits is not None:
            for provider in self.leases.values():
                self.pool.limits.release(provider)
        self.leases.clear()
        if self.writer is not None:
            self.writer.close()
        _settle(self.settled)
        self.pool.lost(self)

    def shutdown(self) -> None:
        """Close the socket now: the worker reads end-of-file and stops."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class ProcessPool:
    """A `SimulationExecutor` over local worker processes (see the module docstring).

    Built before the event loop starts (it forks); `running()` connects it inside the loop
    (`start`) and closes the workers' sockets when the batch is over (`stop`), and `close`
    reaps every process afterwards."""

    def __init__(
        self,
        runner: SimulationRunner,
        count: int,
        *,
        server: str | None = None,
        token: str | None = None,
        provider_limits: dict[str, int] | None = None,
    ) -> None:
        self.runner = runner
        self.config: RunConfig = runner.config
        self.count = count
        limits = dict(provider_limits or {})
        self.limits = LocalProviderLimits(limits) if limits else None
        # Workers get the configuration as given (their Runner fills in the same defaults);
        # only the driver writes the results file.
        setup = WorkerSetup(
            domain=runner.domain,
            config=_without_file(runner.config),
            server=server,
            token=token,
            provider_limits=limits,
        )
        self.links: list[WorkerLink] = []
        self.deaths = 0
        self.deaths_since_progress = 0
        self.replacing = 0
        self.closed = False
        self._changed: asyncio.Event | None = None
        self._background: set[asyncio.Task[None]] = set()
        self._forked: list[tuple[int, socket.socket]] = []
        if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
            raise ConfigError("--workers needs a system with fork (Linux, macOS); use --ray")
        try:
            self.spawner = Spawner(partial(worker_main, setup))
        except OSError as exc:
            raise ConfigError(f"cannot start worker processes ({exc})") from None
        try:
            for _ in range(count):
                self._forked.append(self.spawner.spawn())
        except OSError as exc:
            self.close()
            raise ConfigError(f"cannot start worker processes ({exc})") from None
        except BaseException:
            self.close()
            raise

    # --- inside the event loop ------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The workers connected and ready for the batch's duration."""
        try:
            await self.start()
            yield
        finally:
            await self.stop()

    async def start(self) -> None:
        """Connect to the forked workers and wait until each is ready; a worker that cannot
        start (say, `--server` unreachable) stops the run with its one sentence."""
        self._changed = asyncio.Event()
        forked, self._forked = self._forked, []
        links = [await self._connect(pid, sock) for pid, sock in forked]
        await asyncio.gather(*(link.settled for link in links))
        fatal = next((link.fatal for link in links if link.fatal), None)
        if fatal is not None:
            raise ConfigError(fatal)

    async def simulate(self, task: Task, trial: int, seed: int) -> SimulationRecord:
        last_error = ""
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.config.retry_delay)
            link = await self._pick()
            if link is None:
                last_error = f"no worker process left ({self.deaths} ended); {last_error}"
                break
            try:
                sim = await link.run(task.id, trial, seed)
            except WorkerLost as exc:
                last_error = str(exc)
                continue
            except WorkerFailed as exc:
                if exc.config:
                    raise run_stop(exc.kind, str(exc)) from None
                last_error = str(exc)
                continue
            self.deaths_since_progress = 0
            if attempt:
                sim.info = {**(sim.info or {}), "worker_retries": attempt}
            return sim
        return self.runner.infrastructure_record(task.id, trial, seed, last_error.strip("; "))

    async def stop(self) -> None:
        """Close every worker's socket (they stop) and wait for the links to wind down."""
        self.closed = True
        for link in self.links:
            link.shutdown()
        for task in self._background:
            task.cancel()
        readers = [link.reading for link in self.links if link.reading is not None]
        if readers:
            await asyncio.wait(readers, timeout=5.0)

    # --- outside it -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop and reap every worker process and the spawner (idempotent, any time)."""
        self.closed = True
        for link in self.links:
            link.shutdown()
        for _, sock in self._forked:
            sock.close()
        self._forked = []
        self.spawner.close()

    # --- bookkeeping ----------------------------------------------------------------------------
    async def _connect(self, pid: int, sock: socket.socket) -> WorkerLink:
        link = WorkerLink(self, pid, sock)
        self.links.append(link)
        await link.open()
        return link

    def changed(self) -> None:
        if self._changed is not None:
            self._changed.set()
            self._changed = asyncio.Event()

    def lost(self, link: WorkerLink) -> None:
        if link in self.links:
            self.links.remove(link)
        self.changed()
        if self.closed:
            return
        self.deaths += 1
        self.deaths_since_progress += 1
        if self.deaths_since_progress > self.count + self.config.max_retries:
            return  # they die faster than they work: no more replacements
        task = asyncio.create_task(self._replace())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _replace(self) -> None:
        self.replacing += 1
        try:
            pid, sock = await asyncio.to_thread(self.spawner.spawn)
            if self.closed:
                sock.close()
                return
            link = await self._connect(pid, sock)
            await link.settled
        except OSError:
            pass  # the spawner is gone (the run is ending)
        finally:
            self.replacing -= 1
            self.changed()

    async def _pick(self) -> WorkerLink | None:
        """The least loaded ready worker; waits while a replacement is on its way."""
        while True:
            ready = [link for link in self.links if link.alive and link.ready]
            if ready:
                return min(ready, key=lambda link: len(link.pending))
            if (not self.replacing and not self.links) or self.closed or self._changed is None:
                return None
            await self._changed.wait()


def _settle(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _without_file(config: RunConfig) -> RunConfig:
    return config.replace(save_to=None)
