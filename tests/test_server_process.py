"""Issue 10, server items 0, 6 and 10, against a real `tau-server serve` process: keep-alive that
outlives clients' pools, request deadlines, the connection cap, one-sentence startup errors,
and our version everywhere."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from importlib.metadata import version

import pytest

from tests.support.data import DEMO_DIR
from tests.support.server import real_server, serving

pytestmark = pytest.mark.e2e

SERVE = [sys.executable, "-c", "from servers.cli import app; app()"]


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def _read_response(sock: socket.socket, deadline: float = 10) -> tuple[int, dict, bytes]:
    """(status, headers, body) of one HTTP/1.1 response with a content-length."""
    sock.settimeout(deadline)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before a response head: {data!r}")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


def _closed(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while sock.recv(65536):
            pass
        return True
    except TimeoutError:
        return False
    except ConnectionError:
        return True


GET_HEALTH = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


# --- item 10 -----------------------------------------------------------------------------------
def test_version_flag_and_startup_errors_are_one_sentence() -> None:
    out = subprocess.run([*SERVE, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"tau-server {version('tau-mcp')}"

    bad = subprocess.run(
        [*SERVE, "serve", "--port", "99999"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "error: --port must be between 0 and 65535, not 99999"

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            [*SERVE, "serve", "--port", str(port), "--domains", "mock"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert busy.returncode == 2
    assert busy.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: it is already in use"


async def test_server_info_version_is_ours() -> None:
    async with serving(["mock"], DEMO_DIR) as srv:
        for path in ["/mock/agent/mcp", "/mock/user/mcp", "/mock/mcp"]:
            async with srv.mcp(path, mode="legacy") as client:
                info = client.initialize_result.server_info
                assert info.version == version("tau-mcp"), (path, info)


# --- items 0 and 6 -----------------------------------------------------------------------------
def test_keep_alive_outlives_client_pools_and_slow_clients_are_cut_off() -> None:
    extra = ["--header-timeout", "1", "--body-timeout", "1", "--max-connections", "6"]
    with real_server("mock", *extra, data_dir=DEMO_DIR) as base:
        assert_connection_policy(base, "/mock/episodes", connections=6)


def assert_connection_policy(base: str, post_path: str, connections: int) -> None:
    """The connection policy of a server started with a 1 s head and body deadline and a cap
    of `connections` (shared with `tau-harness serve`'s test): keep-alive past 5 s, slow heads
    and bodies cut off with 408 JSON, silent connections closed, 503 JSON past the cap."""
    # 0. A pooled connection reused after 5.5 s idle (past uvicorn's old 5 s keep-alive and
    # httpx's 5 s pool expiry) is still served on the same socket.
    with _connect(base) as sock:
        sock.sendall(GET_HEALTH)
        assert _read_response(sock)[0] == 200
        time.sleep(5.5)
        sock.sendall(GET_HEALTH)
        assert _read_response(sock)[0] == 200

    # 6a. Headers trickled a byte at a time: 408 JSON once the head deadline passes.
    with _connect(base) as sock:
        start = time.monotonic()
        status = None
        for byte in GET_HEALTH[:-4]:
            try:
                sock.sendall(bytes([byte]))
            except OSError:
                break
            time.sleep(0.3)
            if time.monotonic() - start > 2.5:
                break
        status, headers, body = _read_response(sock)
        assert status == 408 and headers["content-type"] == "application/json"
        assert "headers not received" in json.loads(body)["error"]
        assert _closed(sock, 3)

    # 6b. A body trickled a byte every 0.3 s: 408 JSON after the body deadline.
    with _connect(base) as sock:
        sock.sendall(
            f"POST {post_path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()
            + b"Content-Type: application/json\r\nContent-Length: 50\r\n\r\n{"
        )
        start = time.monotonic()
        while time.monotonic() - start < 2.5:
            try:
                sock.sendall(b" ")
            except OSError:
                break
            time.sleep(0.3)
        status, headers, body = _read_response(sock)
        assert status == 408 and "body not received" in json.loads(body)["error"]
        assert _closed(sock, 3)

    # 6c. A connection that never sends anything is closed after the head deadline.
    with _connect(base) as sock:
        assert _closed(sock, 4)

    # 6d. Past --max-connections, a new connection gets 503 JSON and is closed.
    idle = [_connect(base) for _ in range(connections)]
    try:
        time.sleep(0.3)
        with _connect(base) as extra_sock:
            status, _, body = _read_response(extra_sock)
            assert status == 503 and "connection limit" in json.loads(body)["error"]
    finally:
        for sock in idle:
            sock.close()
    time.sleep(0.3)
    with _connect(base) as sock:  # the cap frees up as connections close
        sock.sendall(GET_HEALTH)
        assert _read_response(sock)[0] == 200
