"""Worker processes forked from a copy of the driver taken before its event loop started.

Forking a process that runs an event loop and threads copies their state half-way (a lock held
by another thread stays held forever in the child). So the driver forks once, early, while it is
still one thread with no loop: that copy (the spawner) holds the imported modules and the loaded
domain and does nothing but fork workers on request, at the start and whenever one must be
replaced. A worker therefore starts in milliseconds, with nothing to import or load.

The driver hands the spawner one end of a fresh socket pair per worker (SCM_RIGHTS); the worker
keeps it, the spawner closes its copy, so the driver's end sees end-of-file the moment the
worker dies. No process outlives the driver: the spawner stops its workers when its control
socket closes (the driver ended, however it ended), and the kernel kills the spawner when the
driver dies and each worker when the spawner dies (Linux `PR_SET_PDEATHSIG`). Workers and the
spawner ignore SIGINT: Ctrl-C is the driver's to handle. The spawner reaps its workers and the
driver reaps the spawner, so their CPU time shows in the driver's rusage for its children.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 3.0
PID_BYTES = 8

WorkerMain = Callable[[socket.socket], None]


def die_with_parent(parent: int) -> None:
    """Have the kernel kill this process when `parent` dies (Linux; elsewhere the closed
    socket alone stops it), and leave now if it already has."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


class Spawner:
    """The forked copy of the driver that forks workers (see the module docstring)."""

    def __init__(self, worker_main: WorkerMain) -> None:
        ours, theirs = socket.socketpair()
        driver = os.getpid()
        gc.freeze()  # the copies share these pages instead of rewriting their GC headers
        pid = os.fork()
        if pid == 0:  # the spawner; never returns into the driver's code
            try:
                ours.close()
                _spawner_loop(theirs, worker_main, driver)
            except BaseException:  # noqa: BLE001 - say why, but never run the driver's code
                traceback.print_exc()
            os._exit(1)
        gc.unfreeze()
        theirs.close()
        self.pid: int | None = pid
        self._control = ours
        self._lock = threading.Lock()

    def spawn(self) -> tuple[int, socket.socket]:
        """A new worker: its pid and the driver's end of its socket (blocking, milliseconds)."""
        ours, theirs = socket.socketpair()
        try:
            with self._lock:
                socket.send_fds(self._control, [b"w"], [theirs.fileno()])
                reply = _recv_exactly(self._control, PID_BYTES)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        if len(reply) < PID_BYTES:
            ours.close()
            raise OSError("the worker spawner has gone")
        return int.from_bytes(reply, "big"), ours

    def close(self, timeout: float = STOP_GRACE_S + 2.0) -> None:
        """Stop the spawner and its workers and reap it (idempotent)."""
        if self.pid is None:
            return
        with contextlib.suppress(OSError):
            self._control.shutdown(socket.SHUT_RDWR)
        self._control.close()
        if not _wait(self.pid, timeout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            _wait(self.pid, None)
        self.pid = None


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def _wait(pid: int, timeout: float | None) -> bool:
    """Reap `pid`; False if it is still running after `timeout` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        try:
            done, _ = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:
            return True
        if done:
            return True
        if deadline is not None and time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def _spawner_loop(control: socket.socket, worker_main: WorkerMain, driver: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(driver)
    me = os.getpid()
    children: set[int] = set()
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 16, 1)
        except OSError:
            message, fds = b"", []
        _reap(children)
        if not message or not fds:
            break
        pid = os.fork()
        if pid == 0:
            control.close()
            _worker(fds[0], worker_main, me)
        os.close(fds[0])
        children.add(pid)
        try:
            control.sendall(pid.to_bytes(PID_BYTES, "big"))
        except OSError:
            break
    _stop(children)
    os._exit(0)


def _worker(fd: int, worker_main: WorkerMain, spawner: int) -> None:
    die_with_parent(spawner)
    code = 0
    try:
        worker_main(socket.socket(fileno=fd))
    except BaseException:  # noqa: BLE001 - a worker reports and ends; the driver retries
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
    os._exit(code)  # not the driver's atexit handlers, inherited with its memory


def _reap(children: set[int]) -> None:
    for pid in list(children):
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if not done:
                continue
        children.discard(pid)


def _stop(children: set[int]) -> None:
    """Workers end by themselves when the driver's sockets close; wait a little, then make
    them, and reap every one."""
    deadline = time.monotonic() + STOP_GRACE_S
    while children and time.monotonic() < deadline:
        _reap(children)
        time.sleep(0.01)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 1.0
        while children and time.monotonic() < deadline:
            _reap(children)
            time.sleep(0.01)
    for pid in list(children):
        _wait(pid, None)
