"""One writer per results file: an exclusive lock held for the whole of a run.

Two runs writing the same `--save-to` would each rewrite the file from their own memory, so the
last one to save wins and the other's simulations are lost. A run therefore holds an exclusive
`flock` on a sidecar `<file>.lock` (the results file itself is replaced on every save, so a lock
on it would not survive the first save). The lock covers the results file and its journal; the
kernel drops it when the process dies, however it dies, so a killed run never leaves a stale lock.
The sidecar is removed on release; a process that opened it just before removal notices that
the name now points elsewhere and tries again, so two holders can never coexist.
"""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tau_mcp.harness.results.file import ResultsError


class ResultsLocked(ResultsError):
    """Another process is writing this results file."""


def lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _holder(lock: Path) -> str:
    try:
        pid = lock.read_text(encoding="utf-8").strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


def _acquire(path: Path) -> int:
    lock = lock_path(path)
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ResultsError(f"cannot write results to {path} ({exc.strerror})") from None
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise ResultsError(f"cannot write results to {path} ({exc.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise ResultsLocked(
                    f"{path} is in use by another run{_holder(lock)}; wait for it to finish "
                    "or choose another --save-to"
                ) from None
            raise ResultsError(f"cannot lock {lock} ({exc.strerror})") from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(lock))
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.write(fd, str(os.getpid()).encode())
            return fd
        os.close(fd)  # the previous holder removed the file after we opened it: start over


def _release(path: Path, fd: int) -> None:
    try:
        lock_path(path).unlink(missing_ok=True)  # while still holding it, see module docstring
    finally:
        os.close(fd)  # closing the descriptor drops the flock


@contextmanager
def results_lock(path: Path | None) -> Iterator[None]:
    """Hold the exclusive lock on `path` (and its journal) inside the block; no-op for None.
    A second holder gets ResultsLocked at once, with one sentence saying what to do."""
    if path is None:
        yield
        return
    path = Path(path)
    fd = _acquire(path)
    try:
        yield
    finally:
        _release(path, fd)
