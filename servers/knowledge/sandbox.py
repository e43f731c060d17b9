"""Shell commands in a bubblewrap sandbox that sees one folder and nothing else of the host.

Each command runs in a fresh `bwrap` (no root needed; it uses user namespaces):

- its own user, mount, PID, network, IPC, UTS and cgroup namespaces (`--unshare-all`
  `--unshare-user`); no network at all, not even the host's loopback; no further user namespaces
  inside (`--disable-userns`); every capability dropped; a new session (no terminal to inject
  into); killed with its parent (`--die-with-parent`);
- a root file system built from nothing: `/usr` (and the `/bin`, `/lib*` links or folders the host
  has) read-only, `/etc` holding only `alternatives`, `ld.so.cache` and a two-line `passwd` and
  `group` naming `kb_user`/`kb_group`, a fresh `/proc` of its own PID namespace, a minimal `/dev`,
  a small private `/tmp` (memory, gone with the command), the folder at `/knowledge_base`
  (read-only unless the caller allows writes) as the working directory, and `/` itself read-only;
- an environment of its own (`PATH`, `HOME`, `LANG`, `USER`, `LOGNAME`, `SHELL`): nothing of the
  host's environment, API keys included, reaches it, not even through `/proc/1/environ` (bwrap
  itself is started with that environment, and its options reach it through a pipe, so
  `/proc/1/cmdline` names no host path);
- resource limits set inside before the command starts (`ulimit -H -S`): CPU time, address
  space, processes, file size, open files, no core files; when we run as root, the sandbox runs
  as `nobody` instead (the kernel does not count root's processes against a process limit);
- a cap on the memory of the whole command: every process of the sandbox's PID namespace,
  read through the sandbox's own `/proc` every 20 ms, holds its resident memory (anonymous,
  shared and swapped) in one sum; past the cap the sandbox is killed. Per-process limits alone
  let four processes hold four times the address-space limit. Memory cgroups would be
  kernel-enforced, but they need root or a delegated cgroup v2 subtree with the memory
  controller, which neither an ordinary user nor this project's CI machines have (cgroup v1,
  owned by the host's own process manager); the watchdog needs nothing. The memory-backed
  folders (`/tmp`, `/dev/shm`) have a small size and `/dev` is read-only, so no file holds
  memory that no process shows;
- a wall-clock limit, a cap on the bytes of output, and (for a writable folder) a cap on the
  folder's size and file count: past any of them the whole sandbox is killed (killing `bwrap`
  ends its PID namespace, and every process in it with it);
- at most `concurrent_commands` commands at once per `Sandbox` (the server's is one per
  process); the next waits up to `queue_seconds` for a slot and is then refused, not run.

The command runs as `<bash> -c <command>`, with `bash` found on `PATH` as the reference's
sandbox finds it (`/usr/bin/bash` on Debian), so the shell's own messages read as there.
"""

from __future__ import annotations

import functools
import grp
import json
import logging
import os
import pwd
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from tau_mcp.servers.knowledge.kb_files import FOLDERS, default_parent

#: Where the folder appears inside the sandbox (and `HOME` there).
SANDBOX_DIR = "/knowledge_base"
SANDBOX_UID = 1000
SANDBOX_GID = 1000
SANDBOX_USER = "kb_user"
SANDBOX_GROUP = "kb_group"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SANDBOX_LANG = "C.UTF-8"
#: The host's top-level system folders the shell's programs may need (as links or folders).
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_ETC_FILES = ("alternatives", "ld.so.cache")
_BWRAP_ENV = "TAU_MCP_BWRAP"


log = logging.getLogger(__name__)

#: How often the memory of a running command is summed.
MEMORY_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Limits:
    """What one command may use. The wall-clock limit is the reference's (30 s).
    `memory_bytes` is each process's address space; `command_memory_bytes` the resident memory
    of all of a command's processes together. `concurrent_commands` run at once; another waits
    up to `queue_seconds` for one of them to end."""

    wall_seconds: float = 30.0
    cpu_seconds: int = 30
    memory_bytes: int = 1 << 30
    command_memory_bytes: int = 1 << 30
    processes: int = 64
    file_bytes: int = 16 << 20
    open_files: int = 256
    output_bytes: int = 4 << 20
    tmp_bytes: int = 16 << 20
    workspace_bytes: int = 64 << 20
    workspace_files: int = 5000
    concurrent_commands: int = 8
    queue_seconds: float = 30.0


@dataclass(frozen=True)
class Completed:
    """How a command ended. `returncode` is None when we stopped it, or never started it
    (`busy`: no slot freed within the queue time); see the flags."""

    returncode: int | None
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    output_overflow: bool = False
    workspace_overflow: bool = False
    memory_exceeded: bool = False
    busy: bool = False


class SandboxUnavailable(RuntimeError):
    """The sandbox cannot start on this host; the message says why in one sentence."""


def _bwrap_path() -> str | None:
    name = os.environ.get(_BWRAP_ENV) or "bwrap"
    return shutil.which(name)


@functools.cache
def _setpriv_path() -> str | None:
    return shutil.which("setpriv")


@functools.cache
def shell_path() -> str | None:
    """The shell commands run in: `bash` as found on PATH (the reference's sandbox does so)."""
    found = shutil.which("bash")
    return os.path.abspath(found) if found else None


def _sandbox_account() -> tuple[int, int] | None:
    """The host user and group the sandbox runs as: None (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    try:
        uid = pwd.getpwnam("nobody").pw_uid
    except KeyError:
        uid = 65534
    gid = 65534
    for name in ("nogroup", "nobody"):
        try:
            gid = grp.getgrnam(name).gr_gid
            break
        except KeyError:
            continue
    return uid, gid


def workspace_owner() -> tuple[int, int] | None:
    """Who must own a writable folder for the sandbox to write in it (None: ourselves)."""
    return _sandbox_account()


class Sandbox:
    """Runs commands in bubblewrap over a folder. One per process is enough: it holds the small
    `/etc` files it binds, written once, and the slots that cap concurrent commands."""

    def __init__(self, limits: Limits | None = None, support_dir: Path | None = None) -> None:
        self.limits = limits or Limits()
        self._support_dir = support_dir
        self._etc: Path | None = None
        self._fixed: tuple[list[str], list[str]] | None = None
        self._slots = threading.BoundedSemaphore(self.limits.concurrent_commands)

    # A copy of the process's sandbox is that sandbox (one set of slots per process); a copy of
    # another gets slots of its own.
    def __reduce__(self):
        if self is _DEFAULT:
            return (default_sandbox, ())
        return (Sandbox, (self.limits, self._support_dir))

    # --- setup --------------------------------------------------------------------------------
    def _etc_dir(self) -> Path:
        if self._etc is None:
            # Under the process's knowledge-base folder unless told otherwise: removed at exit.
            parent = self._support_dir or FOLDERS.root
            etc = Path(tempfile.mkdtemp(prefix="tau-mcp-etc-", dir=parent))
            os.chmod(etc, 0o755)
            home = SANDBOX_DIR
            (etc / "passwd").write_text(
                f"{SANDBOX_USER}:x:{SANDBOX_UID}:{SANDBOX_GID}:{SANDBOX_USER}:{home}:/usr/bin/bash\n"
            )
            (etc / "group").write_text(f"{SANDBOX_GROUP}:x:{SANDBOX_GID}:\n")
            for name in ("passwd", "group"):
                os.chmod(etc / name, 0o644)
            self._etc = etc
        return self._etc

    def close(self) -> None:
        etc, self._etc, self._fixed = self._etc, None, None
        if etc is not None:
            shutil.rmtree(etc, ignore_errors=True)

    def options(self, folder: Path, writable: bool) -> list[str]:
        """bwrap's options for one command over `folder` (everything before `--`)."""
        head, tail = self._fixed_options()
        return [*head, "--bind" if writable else "--ro-bind", str(folder), SANDBOX_DIR, *tail]

    def _fixed_options(self) -> tuple[list[str], list[str]]:
        """The options that do not depend on the folder, worked out once."""
        if self._fixed is not None:
            return self._fixed
        lim = self.limits
        head = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--uid", str(SANDBOX_UID),
            "--gid", str(SANDBOX_GID),
            "--hostname", "knowledge-base",
            "--cap-drop", "ALL",
            "--die-with-parent",
            "--new-session",
            "--ro-bind", "/usr", "/usr",
        ]  # fmt: skip
        for name in _SYSTEM_DIRS:
            host = Path("/") / name
            if host.is_symlink():
                head += ["--symlink", os.readlink(host), f"/{name}"]
            elif host.is_dir():
                head += ["--ro-bind", str(host), f"/{name}"]
        for name in _ETC_FILES:
            head += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        etc = self._etc_dir()
        head += ["--ro-bind", str(etc / "passwd"), "/etc/passwd"]
        head += ["--ro-bind", str(etc / "group"), "/etc/group"]
        head += ["--proc", "/proc", "--dev", "/dev"]
        head += ["--size", str(lim.tmp_bytes), "--tmpfs", "/dev/shm"]
        head += ["--size", str(lim.tmp_bytes), "--tmpfs", "/tmp"]
        tail = ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", SANDBOX_DIR, "--clearenv"]
        env = {
            "PATH": SANDBOX_PATH,
            "HOME": SANDBOX_DIR,
            "LANG": SANDBOX_LANG,
            "USER": SANDBOX_USER,
            "LOGNAME": SANDBOX_USER,
            "SHELL": shell_path() or "/usr/bin/bash",
        }
        for key, value in env.items():
            tail += ["--setenv", key, value]
        self._fixed = (head, tail)
        return self._fixed

    def _limit_script(self, bash: str) -> str:
        lim = self.limits
        return (
            f"ulimit -H -S -c 0 -t {lim.cpu_seconds} -v {lim.memory_bytes // 1024} "
            f"-u {lim.processes} -f {max(1, lim.file_bytes // 1024)} -n {lim.open_files}"
            f' || exit 126; exec {bash} -c "$1"'
        )

    # --- running ------------------------------------------------------------------------------
    def run(self, command: str, folder: Path, *, writable: bool = False) -> Completed:
        """Run `command` with `folder` as the working directory. Raises SandboxUnavailable when
        bwrap or bash is missing; a command that breaks a limit is stopped, not raised."""
        bwrap, bash = _bwrap_path(), shell_path()
        if bwrap is None:
            raise SandboxUnavailable(missing_bwrap_sentence())
        if bash is None:
            raise SandboxUnavailable("the shell sandbox needs bash, which is not on PATH")
        if "\0" in command:
            raise ValueError("embedded null byte")
        if not self._slots.acquire(timeout=self.limits.queue_seconds):
            return Completed(None, b"", b"", busy=True)
        try:
            return self._run(command, folder, writable, bwrap, bash)
        finally:
            self._slots.release()

    def _run(self, command: str, folder: Path, writable: bool, bwrap: str, bash: str) -> Completed:
        info_read, info_write = os.pipe()  # bwrap writes the host pid of the sandbox's init
        try:
            data = "\0".join(
                [*self.options(folder, writable), "--info-fd", str(info_write)]
            ).encode()
            data += b"\0"
            if len(data) > 60000:  # more than a pipe holds before bwrap reads it
                raise SandboxUnavailable(f"the sandbox's folder path is too long: {folder}")
            read_fd, write_fd = os.pipe()
            try:
                os.write(write_fd, data)
            finally:
                os.close(write_fd)
            try:
                proc = self._start(command, bwrap, bash, read_fd, info_write)
            finally:
                os.close(read_fd)
        except BaseException:
            os.close(info_read)
            raise
        finally:
            os.close(info_write)
        return self._collect(proc, folder if writable else None, info_read)

    def _start(
        self, command: str, bwrap: str, bash: str, args_fd: int, info_fd: int
    ) -> subprocess.Popen:
        argv = [bwrap, "--args", str(args_fd), "--", bash, "-c", self._limit_script(bash), bash]
        extra: dict = {}
        account = _sandbox_account()
        if account is not None:
            # Dropping root through setpriv lets Python spawn with vfork, which costs less than
            # fork in a big server process; Popen(user=...) works without it.
            setpriv = _setpriv_path()
            if setpriv is not None:
                uid, gid = (str(n) for n in account)
                argv = [setpriv, "--reuid", uid, "--regid", gid, "--clear-groups", *argv]
            else:
                extra = {"user": account[0], "group": account[1], "extra_groups": []}
        return subprocess.Popen(
            [*argv, command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(args_fd, info_fd),
            start_new_session=True,
            env={"PATH": "/usr/bin:/bin"},
            **extra,
        )

    def _collect(self, proc: subprocess.Popen, workspace: Path | None, info_fd: int) -> Completed:
        lim = self.limits
        out, err, info = bytearray(), bytearray(), bytearray()
        timed_out = overflow = too_big = over_memory = False
        started = time.monotonic()
        deadline = started + lim.wall_seconds
        next_check = started + 0.25
        memory: SandboxMemory | None = None
        next_memory = 0.0
        assert proc.stdout is not None and proc.stderr is not None
        selector = selectors.DefaultSelector()
        buffers = {proc.stdout.fileno(): out, proc.stderr.fileno(): err, info_fd: info}
        for fd in buffers:
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ)
        try:
            while len(buffers) > (info_fd in buffers):
                now = time.monotonic()
                if now >= deadline:
                    timed_out = True
                    break
                wait = deadline - now
                if workspace is not None:
                    if now >= next_check:
                        next_check = now + 0.25
                        if _over_quota(workspace, lim):
                            too_big = True
                            break
                    wait = min(wait, max(0.0, next_check - now))
                if memory is not None:
                    if now >= next_memory:
                        next_memory = now + MEMORY_POLL_SECONDS
                        if (memory.resident_bytes() or 0) > lim.command_memory_bytes:
                            over_memory = True
                            break
                    wait = min(wait, max(0.0, next_memory - now))
                for key, _ in selector.select(wait):
                    fd = key.fd
                    try:
                        chunk = os.read(fd, 65536)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        selector.unregister(fd)
                        del buffers[fd]
                        if fd == info_fd:
                            memory = SandboxMemory.from_info(bytes(info))
                        continue
                    buffers[fd].extend(chunk)
                if len(out) + len(err) > lim.output_bytes:
                    overflow = True
                    break
            stopped = timed_out or overflow or too_big or over_memory
            if stopped:
                _kill(proc)
            try:
                proc.wait(timeout=max(1.0, deadline - time.monotonic()) if not stopped else 5)
            except subprocess.TimeoutExpired:
                _kill(proc)
                proc.wait(timeout=5)
                timed_out = True
        finally:
            selector.close()
            proc.stdout.close()
            proc.stderr.close()
            os.close(info_fd)
            if proc.poll() is None:
                _kill(proc)
                proc.wait()
        if workspace is not None and not (timed_out or overflow or too_big or over_memory):
            too_big = _over_quota(workspace, lim)
        if (memory is None or not memory.seen) and time.monotonic() - started > 0.5:
            _warn_unwatched(proc.pid)
        return Completed(
            None if (timed_out or overflow or too_big or over_memory) else proc.returncode,
            bytes(out),
            bytes(err),
            timed_out=timed_out,
            output_overflow=overflow,
            workspace_overflow=too_big,
            memory_exceeded=over_memory,
        )


_unwatched_warned = threading.Event()


def _warn_unwatched(pid: int) -> None:
    """Say once per process that the memory watchdog cannot see into the sandbox."""
    if _unwatched_warned.is_set():
        return
    _unwatched_warned.set()
    log.warning(
        "the shell sandbox cannot read its processes' memory (/proc/%d/root/proc); the cap on "
        "a command's total memory is not enforced here, only the per-process limits",
        pid,
    )


@functools.cache
def _own_pid_namespace() -> int:
    return os.stat("/proc/self/ns/pid").st_ino


_MEMORY_FIELDS = (b"RssAnon:", b"RssShmem:", b"VmSwap:")


class SandboxMemory:
    """The memory held by every process of one sandbox, read through the sandbox's own `/proc`
    (`/proc/<its init>/root/proc`), which lists exactly the processes of its PID namespace:
    background, `setsid` and orphaned ones included, nothing of the host's."""

    def __init__(self, init_pid: int) -> None:
        self.init_pid = init_pid
        self._namespace: int | None = None

    @property
    def seen(self) -> bool:
        """Whether the sandbox's processes have been read at least once."""
        return self._namespace is not None

    @classmethod
    def from_info(cls, info: bytes) -> SandboxMemory | None:
        """From what bwrap wrote to `--info-fd` (None when it wrote nothing: it failed)."""
        try:
            return cls(int(json.loads(info)["child-pid"]))
        except (ValueError, KeyError, TypeError):
            return None

    def resident_bytes(self) -> int | None:
        """Resident anonymous and shared memory plus swap of all the sandbox's processes, or
        None while its root is not in place yet (or once it is gone)."""
        base = f"/proc/{self.init_pid}"
        try:
            namespace = os.stat(f"{base}/ns/pid").st_ino
            if self._namespace is None:
                # Until bwrap has moved into the new root, `root/proc` is the host's /proc.
                if (
                    namespace == _own_pid_namespace()
                    or os.stat(f"{base}/root/proc/1/ns/pid").st_ino != namespace
                ):
                    return None
                self._namespace = namespace
            elif namespace != self._namespace:  # the init ended and its pid was taken
                return None
            proc = f"{base}/root/proc"
            names = [name for name in os.listdir(proc) if name.isdigit()]
        except OSError:
            return None
        total = 0
        for name in names:
            try:
                with open(f"{proc}/{name}/status", "rb") as status:
                    text = status.read()
            except OSError:  # the process ended meanwhile
                continue
            for line in text.splitlines():
                if line.startswith(_MEMORY_FIELDS):
                    total += int(line.split()[1]) * 1024
        return total


def _kill(proc: subprocess.Popen) -> None:
    """Kill bwrap's process group; its PID namespace (every process of the command) dies with
    it, since bwrap's init there is killed along with its parent."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except ProcessLookupError:
            pass


def _over_quota(folder: Path, limits: Limits) -> bool:
    """Whether a writable folder has grown past its size or file-count limit (symlinks are not
    followed; a folder we cannot read counts as nothing)."""
    total = files = 0
    stack = [os.fspath(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    files += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue
        except OSError:
            continue
        if total > limits.workspace_bytes or files > limits.workspace_files:
            return True
    return False


_DEFAULT: Sandbox | None = None
_DEFAULT_LOCK = threading.Lock()


def default_sandbox() -> Sandbox:
    """The process's sandbox with the default limits (its support files under the process's
    knowledge-base folder, so they go when it goes): every episode's shell shares its slots."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = Sandbox(support_dir=FOLDERS.root)
    return _DEFAULT


def missing_bwrap_sentence() -> str:
    return (
        "the shell sandbox needs bubblewrap (bwrap), which is not installed "
        "(Debian/Ubuntu: apt-get install bubblewrap)"
    )


@functools.cache
def sandbox_problem() -> str | None:
    """Why no sandbox can start on this host (one sentence), or None when one can. Checked once
    per process by starting one."""
    if _bwrap_path() is None:
        return missing_bwrap_sentence()
    if shell_path() is None:
        return "the shell sandbox needs bash, which is not on PATH"
    probe_root = Path(tempfile.mkdtemp(prefix="tau-mcp-probe-", dir=default_parent()))
    os.chmod(probe_root, 0o755)
    sandbox = Sandbox(Limits(wall_seconds=20), support_dir=probe_root)
    try:
        done = sandbox.run("echo ok", probe_root)
    except OSError as exc:
        return f"bubblewrap could not be started ({exc.strerror or exc})"
    finally:
        sandbox.close()
        shutil.rmtree(probe_root, ignore_errors=True)
    if done.returncode == 0 and done.stdout == b"ok\n":
        return None
    detail = (done.stderr.decode("utf-8", "replace").strip().splitlines() or ["no output"])[-1]
    if done.timed_out:
        detail = "it did not finish within 20 seconds"
    return (
        f"bubblewrap cannot start a sandbox on this host ({detail}); unprivileged user "
        "namespaces may be disabled (sysctl kernel.unprivileged_userns_clone or "
        "user.max_user_namespaces)"
    )
