"""Load benchmark: N concurrent clients x M MCP tool calls against `tau-server serve` on loopback,
with the machine kept busy, counting requests the server dropped (target: 0).

Each client is its own HTTP client with its own keep-alive pool (as each simulation of a
harness run is): it creates an episode, makes M tool calls with a random pause before each
(a model "thinking"; pauses around 5 s are where pooled keep-alive connections used to race the
server's keep-alive timeout), and deletes the episode. CPU burners (one per core by default)
keep the machine busy. A dropped request is one that got no HTTP response at all
(`Server disconnected without sending a response`, `ReadError`, connection reset).

    python scripts/bench_load.py [--clients 200] [--calls 10] [--think 6] [--burners N]
                                 [--domain mock] [--url http://127.0.0.1:8000]
                                 [--server-arg=--keep-alive=5 ...]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import os
import random
import socket
import statistics
import subprocess
import sys
import time

import httpx2

READ_CALL = {
    "mock": ("get_users", {}),
    "airline": ("get_user_details", {"user_id": "mia_li_3668"}),
    "retail": ("get_user_details", {"user_id": "yusuf_rossi_9620"}),
    "telecom": ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
}
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench-load", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
MAX_RUN_SECONDS = 900  # bounded: the whole run is cancelled past this


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        sum(i * i for i in range(10_000))


def start_burners(count: int, seconds: float) -> list[multiprocessing.Process]:
    stop_at = time.monotonic() + seconds
    procs = [
        multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True) for _ in range(count)
    ]
    for proc in procs:
        proc.start()
    return procs


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(domain: str, extra: list[str]) -> tuple[str, subprocess.Popen]:
    port = free_port()
    command = [sys.executable, "-c", "from servers.cli import app; app()", "serve"]
    command += ["--port", str(port), "--domains", domain, *extra]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx2.get(base + "/health", timeout=1).status_code == 200:
                return base, proc
        except httpx2.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("server did not start within 120 s")


class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.requests = 0
        self.dropped: collections.Counter[str] = collections.Counter()
        self.http_errors: collections.Counter[int] = collections.Counter()

    async def send(self, client: httpx2.AsyncClient, method: str, path: str, **kw) -> bool:
        self.requests += 1
        start = time.perf_counter()
        try:
            response = await client.request(method, path, **kw)
        except httpx2.TransportError as exc:
            self.dropped[f"{type(exc).__name__}: {exc}"[:90]] += 1
            return False
        if response.status_code >= 400:
            self.http_errors[response.status_code] += 1
            return False
        if path.endswith("/mcp"):
            self.latencies.append(time.perf_counter() - start)
        return True


async def one_client(base: str, domain: str, calls: int, think: float, tally: Tally) -> None:
    name, args = READ_CALL[domain]
    async with httpx2.AsyncClient(base_url=base, timeout=120) as client:
        created = await client.post(f"/{domain}/episodes", json={})
        tally.requests += 1
        if created.status_code != 201:
            tally.http_errors[created.status_code] += 1
            return
        ref = created.json()
        for index in range(calls):
            await asyncio.sleep(random.uniform(0, think))
            body = {
                "jsonrpc": "2.0",
                "id": index,
                "method": "tools/call",
                "params": {"name": name, "arguments": args, "_meta": META},
            }
            await tally.send(
                client,
                "POST",
                ref["agent_mcp"],
                content=json.dumps(body),
                headers={**HEADERS, "mcp-name": name},
            )
        await tally.send(client, "DELETE", f"/{domain}/episodes/{ref['episode_id']}")


async def run(base: str, options: argparse.Namespace) -> Tally:
    tally = Tally()

    async def client_with_retry_of_setup(i: int) -> None:
        try:
            await one_client(base, options.domain, options.calls, options.think, tally)
        except httpx2.TransportError as exc:  # the episode creation itself was dropped
            tally.dropped[f"{type(exc).__name__}: {exc}"[:90]] += 1

    await asyncio.wait_for(
        asyncio.gather(*(client_with_retry_of_setup(i) for i in range(options.clients))),
        MAX_RUN_SECONDS,
    )
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--think", type=float, default=6.0, help="max pause before a call, s")
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--domain", default="mock", choices=sorted(READ_CALL))
    parser.add_argument("--url", default=None, help="a running server (default: start one)")
    parser.add_argument(
        "--server-arg", action="append", default=[], help="extra `tau-server serve` argument"
    )
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()
    random.seed(options.seed)
    proc = None
    if options.url:
        base = options.url.rstrip("/")
    else:
        base, proc = start_server(options.domain, options.server_arg)
    burners = start_burners(options.burners, MAX_RUN_SECONDS)
    try:
        start = time.perf_counter()
        tally = asyncio.run(run(base, options))
        elapsed = time.perf_counter() - start
    finally:
        for burner in burners:
            burner.terminate()
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=10)
    calls = len(tally.latencies)
    lat = sorted(tally.latencies) or [0.0]
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(
        f"{options.clients} clients x {options.calls} calls ({options.domain}, think 0-"
        f"{options.think:g} s, {options.burners} CPU burners): {elapsed:.1f} s"
    )
    print(
        f"tool calls ok: {calls}, {calls / elapsed:.1f} calls/s; "
        f"latency p50 {statistics.median(lat) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"
    )
    dropped = sum(tally.dropped.values())
    print(f"requests: {tally.requests}, dropped (no response): {dropped}")
    for reason, count in tally.dropped.most_common():
        print(f"  {count} x {reason}")
    if tally.http_errors:
        print(f"HTTP errors: {dict(tally.http_errors)}")
    sys.exit(1 if dropped or tally.http_errors else 0)


if __name__ == "__main__":
    main()
