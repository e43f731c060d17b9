"""What the front of `tau-server serve --workers N` costs per request: N sequential requests on
one keep-alive connection through it (`GET /{domain}/episodes/{id}/hash`, a cheap route), with
the CPU of the front and of the workers read from /proc.

    python scripts/bench_front.py [--requests 3000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_live import cpu_seconds, tree  # noqa: E402
from serving import free_port, raw_request, serve_command, start_server, stop  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    server_args = ["--domains", "mock", "--workers", str(args.workers)]
    if args.data_dir:
        server_args += ["--data-dir", args.data_dir]
    port = free_port()
    base, proc = start_server(serve_command(port, server_args), port)
    try:
        with urllib.request.urlopen(base + "/health") as answer:  # the workers' pids
            report = json.load(answer)
        workers = {w["pid"] for w in report["workers"]}
        front = [p for p in tree([proc.pid]) if p not in workers and p != proc.pid]
        create = urllib.request.Request(
            base + "/mock/episodes",
            data=b'{"episode_id": "front-bench"}',
            headers={"content-type": "application/json"},
        )
        urllib.request.urlopen(create).close()
        request = b"GET /mock/episodes/front-bench/hash HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n"
        with socket.create_connection(("127.0.0.1", port)) as sock:

            def one() -> None:
                raw_request(sock, request)

            for _ in range(200):
                one()
            front0 = sum(cpu_seconds(p) for p in front)
            workers0 = sum(cpu_seconds(p) for p in workers)
            started = time.perf_counter()
            for _ in range(args.requests):
                one()
            wall = time.perf_counter() - started
        front_ms = (sum(cpu_seconds(p) for p in front) - front0) * 1000 / args.requests
        workers_ms = (sum(cpu_seconds(p) for p in workers) - workers0) * 1000 / args.requests
        print(
            f"{args.requests} sequential GET /hash through the front of --workers {args.workers}: "
            f"front CPU {front_ms:.3f} ms per request, workers {workers_ms:.3f} ms, round trip "
            f"{wall * 1000 / args.requests:.3f} ms; load average {os.getloadavg()[0]:.2f}"
        )
    finally:
        stop(proc, timeout=60)


if __name__ == "__main__":
    main()
