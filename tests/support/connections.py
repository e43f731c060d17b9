"""Raw-socket checks of a server's connection policy, shared by the tests of `tau-server serve`
and `tau-harness serve` (the same policy, `servers/http_server.py`)."""

from __future__ import annotations

import json
import socket
import time


def connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=10)
    return sock


def read_response(sock: socket.socket, deadline: float = 10) -> tuple[int, dict, bytes]:
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


def closed(sock: socket.socket, within: float) -> bool:
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


def assert_connection_policy(base: str, post_path: str, connections: int) -> None:
    """The connection policy of a server started with a 1 s head and body deadline and a cap
    of `connections` (shared with `tau-harness serve`'s test): keep-alive past 5 s, slow heads
    and bodies cut off with 408 JSON, oversized heads with 431 JSON, silent connections
    closed, 503 JSON past the cap."""
    # 0. A pooled connection reused after 5.5 s idle (past uvicorn's old 5 s keep-alive and
    # httpx's 5 s pool expiry) is still served on the same socket.
    with connect(base) as sock:
        sock.sendall(GET_HEALTH)
        assert read_response(sock)[0] == 200
        time.sleep(5.5)
        sock.sendall(GET_HEALTH)
        assert read_response(sock)[0] == 200

    # 6a. Headers trickled a byte at a time: 408 JSON once the head deadline passes.
    with connect(base) as sock:
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
        status, headers, body = read_response(sock)
        assert status == 408 and headers["content-type"] == "application/json"
        assert "headers not received" in json.loads(body)["error"]
        assert closed(sock, 3)

    # 6b. A body trickled a byte every 0.3 s: 408 JSON after the body deadline.
    with connect(base) as sock:
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
        status, headers, body = read_response(sock)
        assert status == 408 and "body not received" in json.loads(body)["error"]
        assert closed(sock, 3)

    # 6e. A request head past the size bound (16 KiB, as h11 had; llhttp itself has none):
    # 431 JSON, then closed, before the head ends.
    with connect(base) as sock:
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: " + b"a" * 40_000)
        status, headers, body = read_response(sock)
        assert status == 431 and headers["content-type"] == "application/json"
        assert "head larger than" in json.loads(body)["error"]
        assert closed(sock, 3)

    # 6c. A connection that never sends anything is closed after the head deadline.
    with connect(base) as sock:
        assert closed(sock, 4)

    # 6d. Past --max-connections, a new connection gets 503 JSON and is closed.
    idle = [connect(base) for _ in range(connections)]
    try:
        time.sleep(0.3)
        with connect(base) as extra_sock:
            status, _, body = read_response(extra_sock)
            assert status == 503 and "connection limit" in json.loads(body)["error"]
    finally:
        for sock in idle:
            sock.close()
    time.sleep(0.3)
    with connect(base) as sock:  # the cap frees up as connections close
        sock.sendall(GET_HEALTH)
        assert read_response(sock)[0] == 200
