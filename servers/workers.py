"""`tau-server serve --workers N`: N server processes behind one address.

The `serve` process becomes a supervisor that never serves a request. Having bound the public
port and loaded and warmed the domains (so that every copy shares those pages), it binds one
loopback socket per worker and forks:

- the front (`servers/router.py`), on the public socket: it routes every request of an episode
  to the worker that holds it (`servers/routing.py`) and keeps the connection policy;
- N workers, worker `i` serving the whole app (`http_server.run`, the same guard stack and
  connection policy as a single process) on socket `i`, owning the episodes whose id hashes to
  `i`, at most `ceil(capacity / N)` of them.

The supervisor keeps every listening socket open, so a worker's address outlives the worker:
when one dies, the supervisor tells the front (its episodes then answer one sentence saying so)
and forks a replacement on the same socket; requests for the others never notice, and new
connections to the dead worker wait in its backlog for the replacement. SIGINT or SIGTERM stops
the front first (requests in flight finish), then the workers. Children are in their own process
group (Ctrl-C reaches only the supervisor, which stops them in order) and die with it
(`PR_SET_PDEATHSIG`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import logging
import math
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tau_mcp.servers.http_server import ConnectionPolicy, bind_socket

log = logging.getLogger("tau.server")

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 30.0
# A worker dying this soon after it started, again and again, is not restarted at full speed.
QUICK_DEATH_S = 2.0
MAX_BACKOFF_S = 5.0
# Connections the front may open to one worker beyond the clients' cap (health checks).
SPARE_CONNECTIONS = 16


def auto_workers() -> int:
    """`--workers auto`: one per CPU this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def parse_workers(text: str) -> int:
    """`--workers`: a positive number or 'auto'; ValueError (one sentence) otherwise."""
    if text.strip().lower() == "auto":
        return auto_workers()
    try:
        count = int(text)
    except ValueError:
        raise ValueError(f"--workers must be a positive number or 'auto', not '{text}'") from None
    if count < 1:
        raise ValueError(f"--workers must be a positive number or 'auto', not '{text}'")
    return count


def per_worker_capacity(capacity: int, count: int) -> int:
    """Each worker's share of `--capacity`, so the total never exceeds it."""
    return max(1, math.ceil(capacity / count))


def worker_policy(policy: ConnectionPolicy) -> ConnectionPolicy:
    """A worker's connection policy: its only client is the front, which opens at most one
    connection per request in flight (at most one per client connection)."""
    return ConnectionPolicy(
        keep_alive=policy.keep_alive,
        header_timeout=policy.header_timeout,
        max_connections=policy.max_connections + SPARE_CONNECTIONS,
        backlog=policy.backlog,
    )


class _Stop(Exception):
    def __init__(self, number: int) -> None:
        self.number = number


@dataclass
class _Child:
    role: str  # "front" or "worker"
    index: int
    started: float


def _become_child(supervisor: int) -> None:
    """In a freshly forked child: own process group, die with the supervisor, and none of the
    supervisor's exit handlers (they would remove its folders)."""
    with contextlib.suppress(OSError):
        os.setpgid(0, 0)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != supervisor:
        os._exit(0)
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_DFL)
    atexit._clear()


def serve_workers(
    count: int,
    public: socket.socket,
    build_app: Callable[[int], Any],
    policy: ConnectionPolicy,
    *,
    capacity: int,
    max_body: int,
    body_timeout: float,
    log_level: str = "warning",
) -> str | None:
    """Serve with `count` workers (`build_app(i)` makes worker i's app, in the worker) behind
    the front on `public`, until SIGINT or SIGTERM; returns that signal's name."""
    from tau_mcp.servers import http_server
    from tau_mcp.servers.router import serve_front

    host = "127.0.0.1"
    sockets = [bind_socket(host, 0, policy.backlog) for _ in range(count)]
    addresses = [(host, s.getsockname()[1]) for s in sockets]
    notice_read, notice_write = os.pipe()
    supervisor = os.getpid()
    children: dict[int, _Child] = {}
    quick_deaths = [0] * count

    def fork_front() -> None:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _become_child(supervisor)
                for sock in sockets:
                    sock.close()
                os.close(notice_write)
                serve_front(
                    public, addresses, notice_read, policy, capacity, max_body, body_timeout
                )
            except BaseException:  # noqa: BLE001 - say why, never return into the supervisor
                traceback.print_exc()
                code = 1
            os._exit(code)
        children[pid] = _Child("front", -1, time.monotonic())

    def fork_worker(index: int) -> None:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _become_child(supervisor)
                public.close()
                os.close(notice_read)
                os.close(notice_write)
                for other, sock in enumerate(sockets):
                    if other != index:
                        sock.close()
                app = build_app(index)
                http_server.run(app, sockets[index], worker_policy(policy), log_level)
                atexit._run_exitfuncs()  # this worker's own clean-up (knowledge-base files)
            except BaseException:  # noqa: BLE001
                traceback.print_exc()
                code = 1
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        children[pid] = _Child("worker", index, time.monotonic())
        _notify(notice_write, f"started {index} {pid}\n")

    def on_signal(number: int, _frame) -> None:
        raise _Stop(number)

    previous = {n: signal.signal(n, on_signal) for n in (signal.SIGINT, signal.SIGTERM)}
    gc.freeze()  # the children share these pages instead of rewriting their GC headers
    stopped: int | None = None
    try:
        try:
            for index in range(count):
                fork_worker(index)
            fork_front()
            while True:
                pid, status = os.waitpid(-1, 0)
                child = children.pop(pid, None)
                if child is None:
                    continue
                why = _exit_reason(status)
                if child.role == "front":
                    log.error("tau-server: the front process %d %s; starting another", pid, why)
                    fork_front()
                    continue
                died_at = time.time()
                _notify(notice_write, f"died {child.index} {pid} {died_at}\n")
                print(
                    f"tau-server: worker {child.index} (pid {pid}) {why}; its episodes are lost, "
                    "starting a replacement",
                    file=sys.stderr,
                    flush=True,
                )
                if time.monotonic() - child.started < QUICK_DEATH_S:
                    quick_deaths[child.index] += 1
                    time.sleep(min(MAX_BACKOFF_S, 0.1 * 2 ** quick_deaths[child.index]))
                else:
                    quick_deaths[child.index] = 0
                fork_worker(child.index)
        except _Stop as stop:
            stopped = stop.number
        _stop_children(children)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        gc.unfreeze()
        for sock in sockets:
            sock.close()
        for fd in (notice_read, notice_write):
            with contextlib.suppress(OSError):
                os.close(fd)
    return signal.Signals(stopped).name if stopped is not None else None


def _stop_children(children: dict[int, _Child]) -> None:
    """SIGTERM the front, wait for it (its requests in flight finish on the workers), then the
    workers; a second signal, or STOP_GRACE_S, ends the wait with SIGKILL."""
    for role in ("front", "worker"):
        group = [pid for pid, child in children.items() if child.role == role]
        for pid in group:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for pid in group:
            try:
                while time.monotonic() < deadline:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                    if done:
                        break
                    time.sleep(0.02)
                else:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
            except _Stop:
                for other in group:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(other, signal.SIGKILL)
            except ChildProcessError:
                pass
            children.pop(pid, None)


def _notify(fd: int, line: str) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, line.encode())


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.WEXITSTATUS(status)}"
