"""Starting a server for a benchmark: a free loopback port, `tau-server serve` (or `tau-harness
serve`) in a subprocess, and waiting until it answers `GET /health`.

Most benchmarks in scripts/ measure a real server in its own process (so client and server do not
share a GIL); this is that one job, done once. The waits differ between benchmarks only in their
deadline, polling interval and failure sentence, which stay each script's own (`Wait`). The probe
is the standard library's `http.client` (no proxy settings, no pool), whatever client a benchmark
itself measures. Scripts import it as `import serving` (scripts/ is on sys.path when one runs as
a file).
"""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

# The entry points, run by this interpreter without relying on the console scripts being on PATH.
TAU_SERVER = (sys.executable, "-c", "from tau_mcp.servers.cli import app; app()")
TAU_HARNESS = (sys.executable, "-c", "from tau_mcp.harness.cli import main; main()")


def free_port() -> int:
    """A loopback port nothing listens on right now (the OS picks it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_command(port: int, args: Sequence[str], *, harness: bool = False) -> list[str]:
    """`tau-server serve --port PORT ARGS...` (`tau-harness serve ...` with `harness`)."""
    return [*(TAU_HARNESS if harness else TAU_SERVER), "serve", "--port", str(port), *args]


def _answer(base_url: str, path: str, timeout: float) -> bytes | None:
    """The body of `GET base_url+path` when it answers 200; None when it does not (yet)."""
    url = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        connection.request("GET", url.path.rstrip("/") + path)
        response = connection.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()
    return body if response.status == 200 else None


@dataclass(frozen=True)
class Wait:
    """How long and how often to poll a starting server, and what to say when it does not come up.

    `exited`, when set, is said instead of `failure` as soon as the server's process has exited
    (`{code}` in it becomes the exit code)."""

    seconds: float = 120.0
    interval: float = 0.2
    probe_timeout: float = 1.0
    failure: str = "server did not start"
    exited: str | None = None
    path: str = "/health"


def wait_until_up(
    base_url: str, wait: Wait = Wait(), proc: subprocess.Popen | None = None
) -> bytes:
    """Polls `GET base_url+wait.path` until it answers 200 and returns that answer's body; exits
    (SystemExit) with `wait.failure` after `wait.seconds`, or as soon as `proc` (when given) has
    exited. Stopping the process is the caller's business (`start_server` kills it)."""
    deadline = time.monotonic() + wait.seconds
    while True:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(
                wait.exited.format(code=proc.returncode) if wait.exited else wait.failure
            )
        body = _answer(base_url, wait.path, wait.probe_timeout)
        if body is not None:
            return body
        if time.monotonic() >= deadline:
            raise SystemExit(wait.failure)
        time.sleep(wait.interval)


def start_server(
    command: Sequence[str], port: int, wait: Wait = Wait(), **popen: Any
) -> tuple[str, subprocess.Popen]:
    """Runs `command` (a server that listens on loopback `port`; stderr to /dev/null unless
    `popen` says otherwise) and returns its base URL and process once it answers; kills it when
    it does not come up in time. `popen` goes to `subprocess.Popen`."""
    proc = subprocess.Popen(list(command), **{"stderr": subprocess.DEVNULL, **popen})
    base_url = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base_url, wait, proc)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return base_url, proc


def start_tau_server(
    args: Sequence[str], wait: Wait = Wait(), *, harness: bool = False, **popen: Any
) -> tuple[str, subprocess.Popen]:
    """`tau-server serve --port P ARGS...` (`tau-harness serve ...` with `harness`) on a free
    port, up and answering: see `start_server`."""
    port = free_port()
    return start_server(serve_command(port, args, harness=harness), port, wait, **popen)


def stop(proc: subprocess.Popen, timeout: float) -> None:
    """Asks the process to end (SIGTERM) and kills it if it has not within `timeout` seconds."""
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def raw_request(sock: socket.socket, request: bytes) -> tuple[bytes, bytes]:
    """Sends one HTTP/1.1 request on a kept-alive socket and reads its answer, framed by its
    `Content-Length` (none: no body): (head, body). Raw bytes keep the client's cost tiny."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        ),
        0,
    )
    while len(body) < length:
        body += sock.recv(65536)
    return head, body
