"""A run's simulations on a Ray cluster.

The driver (the `tau-harness run` process) keeps everything a local run has: task selection,
seeds, `--max-concurrency`, the progress bar, and the results file (journal, atomic rewrites,
resume), which only it writes. Simulations run in a pool of async Ray actors, one per CPU by
default; each loads the domain once and serves its episodes in-process (or talks to `--server`),
running many simulations at once on its own event loop, exactly as a local run does.

A worker that dies (killed process, lost node) fails only the simulations it was running: Ray
restarts the actor, and the driver retries those simulations under the run's retry rule
(`--max-retries`), recording an infrastructure error when retries run out, as a local run does.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.errors import ConfigError, run_stop
from tau_mcp.harness.results import SimulationRecord
from tau_mcp.harness.simulate import SimulationRunner
from tau_mcp.harness.wiring import load_domain, open_backend
from tau_mcp.servers.domains.discovery import search_paths
from tau_mcp.servers.engine.errors import EngineError
from tau_mcp.servers.engine.tasks import Task

LEASE_TIMEOUT_S = 900.0


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        from tau_mcp.harness.install_hint import install_command

        raise ConfigError(
            f"--ray needs Ray, which is not installed: {install_command('ray')}"
        ) from None
    return ray


@dataclass(frozen=True)
class WorkerPayload:
    """What a worker needs to build its own domain, backend and runner."""

    domain: str
    data_dir: str
    task_set: str | None
    #: The pack folders the driver looks in (`--domain-path`, $TAU_DOMAIN_PATH): an actor on
    #: another machine does not inherit the driver's environment.
    domain_paths: tuple[str, ...]
    server: str | None
    token: str | None
    config: RunConfig
    provider_limits: dict[str, int]
    limiter: Any = None  # a ProviderLimiter actor handle when limits are set


class _Worker:
    """One worker process's simulations (made a Ray actor in `_actor_class`)."""

    def __init__(self, payload: WorkerPayload) -> None:
        self.payload = payload
        self._runner: SimulationRunner | None = None
        self._lock = asyncio.Lock()

    async def _get_runner(self) -> SimulationRunner:
        async with self._lock:
            if self._runner is None:
                p = self.payload
                domain = load_domain(
                    p.domain,
                    Path(p.data_dir),
                    ready="warm",
                    task_set=p.task_set,
                    domain_paths=p.domain_paths,
                )
                backend = await open_backend(domain, p.server, p.token)
                if p.limiter is not None:
                    from tau_mcp.conversation.llm import set_request_gate

                    set_request_gate(RayProviderGate(p.limiter, p.provider_limits).gate)
                self._runner = SimulationRunner(backend, domain, p.config)
        return self._runner

    async def simulate(self, task_id: str, trial: int, seed: int) -> dict[str, Any]:
        """The record's layout (plain data for the trip back to the driver)."""
        runner = await self._get_runner()
        record = await runner.simulate(runner.domain.task(task_id), trial, seed)
        return record.layout()

    def pid(self) -> int:
        return os.getpid()


class _Limiter:
    """Permits per provider, shared by every worker (made a Ray actor in `_limiter_class`).

    A permit is a lease; a worker that dies holding one cannot give it back, so leases older
    than LEASE_TIMEOUT_S are reclaimed.
    """

    def __init__(self, limits: dict[str, int]) -> None:
        self.limits = dict(limits)
        self.leases: dict[str, dict[int, float]] = {p: {} for p in limits}
        self.next_id = 0
        self.peak: dict[str, int] = {p: 0 for p in limits}
        self._changed = asyncio.Condition()

    def _reclaim(self, provider: str, now: float) -> None:
        stale = [i for i, t in self.leases[provider].items() if now - t > LEASE_TIMEOUT_S]
        for lease in stale:
            del self.leases[provider][lease]

    async def acquire(self, provider: str) -> int | None:
        if provider not in self.limits:
            return None
        loop = asyncio.get_running_loop()
        async with self._changed:
            while True:
                self._reclaim(provider, loop.time())
                if len(self.leases[provider]) < self.limits[provider]:
                    break
                try:
                    await asyncio.wait_for(self._changed.wait(), timeout=5.0)
                except TimeoutError:
                    pass
            self.next_id += 1
            self.leases[provider][self.next_id] = loop.time()
            self.peak[provider] = max(self.peak[provider], len(self.leases[provider]))
            return self.next_id

    async def release(self, provider: str, lease: int | None) -> None:
        if lease is None:
            return
        async with self._changed:
            self.leases.get(provider, {}).pop(lease, None)
            self._changed.notify_all()

    def peaks(self) -> dict[str, int]:
        return dict(self.peak)


class RayProviderGate:
    """The request gate workers install: a lease from the shared limiter around each request."""

    def __init__(self, limiter: Any, limits: dict[str, int]) -> None:
        self.limiter, self.limits = limiter, limits

    @asynccontextmanager
    async def gate(self, model: str) -> Any:
        from tau_mcp.harness.distributed.limits import provider_of

        provider = provider_of(model)
        if provider not in self.limits:
            yield
            return
        lease = await self.limiter.acquire.remote(provider)
        try:
            yield
        finally:
            await self.limiter.release.remote(provider, lease)


_ACTOR_CLASSES: dict[str, Any] = {}


def _actor_class(ray: Any) -> Any:
    if "worker" not in _ACTOR_CLASSES:
        _ACTOR_CLASSES["worker"] = ray.remote(max_restarts=-1, max_task_retries=0)(_Worker)
    return _ACTOR_CLASSES["worker"]


def _limiter_class(ray: Any) -> Any:
    if "limiter" not in _ACTOR_CLASSES:
        _ACTOR_CLASSES["limiter"] = ray.remote(num_cpus=0)(_Limiter)
    return _ACTOR_CLASSES["limiter"]


def connect(address: str | None) -> Any:
    """Join the cluster at `address` (`auto`, `ray://host:port`), or start a local instance."""
    ray = import_ray()
    if ray.is_initialized():
        return ray
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    if address and address != "local":
        kwargs["address"] = address
    else:
        kwargs["include_dashboard"] = False
    # Workers import this package from the same installation (or the job's working_dir).
    try:
        ray.init(**kwargs)
    except Exception as exc:  # noqa: BLE001 - any failure to reach a cluster is one sentence
        where = f"the Ray cluster at {address}" if address and address != "local" else "Ray"
        raise ConfigError(f"cannot start or reach {where}: {exc}") from None
    return ray


class RayPool:
    """A `SimulationExecutor` that runs simulations on a pool of Ray actors."""

    def __init__(
        self,
        runner: SimulationRunner,
        *,
        address: str | None,
        server: str | None,
        token: str | None,
        provider_limits: dict[str, int] | None = None,
        workers: int | None = None,
    ) -> None:
        self.ray = connect(address)
        self.runner = runner
        self.config = runner.config
        limits = dict(provider_limits or {})
        self.limiter = _limiter_class(self.ray).remote(limits) if limits else None
        cpus = float(self.ray.cluster_resources().get("CPU", 1)) or 1.0
        count = max(1, min(workers or int(cpus) or 1, self.config.max_concurrency))
        per_actor = -(-self.config.max_concurrency // count)  # ceil
        # The driver does not pickle its results-file handle or judge state into workers.
        worker_config = self.config.replace(save_to=None)
        payload = WorkerPayload(
            domain=runner.domain.name,
            data_dir=str(runner.domain.data_dir),
            task_set=runner.domain.task_set,
            domain_paths=tuple(str(path.resolve()) for path in search_paths()),
            server=server,
            token=token,
            config=worker_config,
            provider_limits=limits,
            limiter=self.limiter,
        )
        actor = _actor_class(self.ray)
        self.actors = [
            actor.options(max_concurrency=per_actor + 1, num_cpus=min(1.0, cpus / count)).remote(
                payload
            )
            for _ in range(count)
        ]
        self.load = [0] * count

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The actors start with the pool and are killed by `close`: nothing to do here."""
        yield

    async def simulate(self, task: Task, trial: int, seed: int) -> SimulationRecord:
        ray = self.ray
        crash_types = _crash_types(ray)
        last_error = ""
        for attempt in range(self.config.max_retries + 1):
            if attempt:
                await asyncio.sleep(self.config.retry_delay)
            index = min(range(len(self.actors)), key=self.load.__getitem__)
            self.load[index] += 1
            try:
                sim = SimulationRecord.trusted(
                    await self.actors[index].simulate.remote(task.id, trial, seed)
                )
            except crash_types as exc:
                last_error = f"Ray worker lost: {type(exc).__name__}: {_short(exc)}"
                continue
            except ray.exceptions.RayTaskError as exc:
                # Raised inside the worker (configuration or engine errors are not retried).
                cause = exc.as_instanceof_cause()
                if isinstance(cause, ConfigError | EngineError):
                    message = cause.args[0] if cause.args else str(cause)
                    raise run_stop(type(cause).__name__, str(message)) from None
                last_error = f"{type(cause).__name__}: {_short(cause)}"
                continue
            finally:
                self.load[index] -= 1
            if attempt:
                sim.info = {**(sim.info or {}), "worker_retries": attempt}
            return sim
        return self.runner.infrastructure_record(task.id, trial, seed, last_error)

    async def worker_pids(self) -> list[int]:
        return list(await asyncio.gather(*(a.pid.remote() for a in self.actors)))

    async def provider_peaks(self) -> dict[str, int]:
        return await self.limiter.peaks.remote() if self.limiter is not None else {}

    def close(self) -> None:
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone
                pass
        if self.limiter is not None:
            try:
                self.ray.kill(self.limiter)
            except Exception:  # noqa: BLE001
                pass


def _crash_types(ray: Any) -> tuple[type[BaseException], ...]:
    names = (
        "RayActorError",
        "ActorDiedError",
        "ActorUnavailableError",
        "WorkerCrashedError",
        "NodeDiedError",
        "ObjectLostError",
        "OwnerDiedError",
    )
    return tuple(
        getattr(ray.exceptions, n)
        for n in names
        if isinstance(getattr(ray.exceptions, n, None), type)
    )


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[-1] if text else "")[:300]
