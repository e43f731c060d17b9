"""Load benchmark: N concurrent clients x M MCP tool calls against `tau-server serve` (or, with
`--serve`, `tau-harness serve`) on loopback, with the machine kept busy, counting requests the
server dropped (target: 0).

Each client is its own HTTP client with its own keep-alive pool (as each simulation of a
harness run is): it creates an episode, makes M tool calls with a random pause before each
(a model "thinking"; pauses around 5 s are where pooled keep-alive connections used to race the
server's keep-alive timeout), and deletes the episode. CPU burners (one per core by default)
keep the machine busy. A dropped request is one that got no HTTP response at all
(`Server disconnected without sending a response`, `ReadError`, connection reset).

With `--serve`, each client creates a simulation (`POST /simulations`), makes its M tool calls
as agent moves on the simulation's MCP endpoint and ends it (`POST .../end`, which grades it).

`--hostile` measures instead how the JSON guard copes with a hostile body: N times a 1 MiB
unterminated string of escaped quotes (`"` then `\"` repeated, the body that froze the old,
quadratic check for half an hour), sent on a raw connection so no client library is timed,
while a client polls `/health` every 10 ms; it prints how long each hostile body took to be
answered (first byte sent to response head) and the `/health` latencies during and before.

    python scripts/bench_load.py [--clients 200] [--calls 10] [--think 6] [--burners N]
                                 [--domain mock] [--serve] [--url http://127.0.0.1:8000]
                                 [--server-arg=--keep-alive=5 ...]
    python scripts/bench_load.py --hostile [--serve] [--bodies 20]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import time

import httpx2
from serving import Wait, start_tau_server, stop

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


def start_server(
    domain: str, extra: list[str], serve: bool = False
) -> tuple[str, subprocess.Popen]:
    if serve:  # tau-harness serve: simulations played by the clients, a scripted user
        args = ["--domain", domain, "--user", "scripted", "--judge-llm", "none", *extra]
    else:
        args = ["--domains", domain, *extra]
    return start_tau_server(args, Wait(failure="server did not start within 120 s"), harness=serve)


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


async def _calls(
    client: httpx2.AsyncClient, mcp_path: str, domain: str, calls: int, think: float, tally: Tally
) -> None:
    """`calls` read-only tool calls on an MCP endpoint, each after a random pause."""
    name, args = READ_CALL[domain]
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
            mcp_path,
            content=json.dumps(body),
            headers={**HEADERS, "mcp-name": name},
        )


async def _created(client: httpx2.AsyncClient, path: str, body: dict, tally: Tally) -> dict | None:
    created = await client.post(path, json=body)
    tally.requests += 1
    if created.status_code != 201:
        tally.http_errors[created.status_code] += 1
        return None
    return created.json()


async def one_client(base: str, domain: str, calls: int, think: float, tally: Tally) -> None:
    async with httpx2.AsyncClient(base_url=base, timeout=120) as client:
        ref = await _created(client, f"/{domain}/episodes", {}, tally)
        if ref is None:
            return
        await _calls(client, ref["agent_mcp"], domain, calls, think, tally)
        await tally.send(client, "DELETE", f"/{domain}/episodes/{ref['episode_id']}")


async def one_serve_client(
    base: str, domain: str, calls: int, think: float, tally: Tally, task_id: str, trial: int
) -> None:
    """One outside agent on `tau-harness serve`: a simulation, its tool calls, its end."""
    async with httpx2.AsyncClient(base_url=base, timeout=120) as client:
        body = {"task_id": task_id, "trial": trial}
        simulation = await _created(client, "/simulations", body, tally)
        if simulation is None:
            return
        await _calls(client, simulation["mcp"], domain, calls, think, tally)
        await tally.send(client, "POST", f"/simulations/{simulation['simulation_id']}/end")


async def run(base: str, options: argparse.Namespace) -> Tally:
    tally = Tally()
    task_id = None
    if options.serve:
        async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
            task_id = (await client.get("/tasks")).json()["tasks"][0]["id"]

    async def client_with_retry_of_setup(i: int) -> None:
        try:
            if options.serve:
                await one_serve_client(
                    base, options.domain, options.calls, options.think, tally, task_id, i
                )
                return
            await one_client(base, options.domain, options.calls, options.think, tally)
        except httpx2.TransportError as exc:  # the episode creation itself was dropped
            tally.dropped[f"{type(exc).__name__}: {exc}"[:90]] += 1

    await asyncio.wait_for(
        asyncio.gather(*(client_with_retry_of_setup(i) for i in range(options.clients))),
        MAX_RUN_SECONDS,
    )
    return tally


HOSTILE_BODY = b'"' + b'\\"' * ((1 << 19) - 1)  # 1 MiB less a byte: under the body cap


async def hostile(base: str, options: argparse.Namespace) -> None:
    """The hostile-body measurement (see the module docstring)."""
    path = "/simulations" if options.serve else f"/{options.domain}/episodes"
    health: list[float] = []

    async def poll(client: httpx2.AsyncClient, stop: asyncio.Event, into: list[float]) -> None:
        while not stop.is_set():
            start = time.perf_counter()
            response = await client.get("/health")
            if response.status_code == 200:
                into.append(time.perf_counter() - start)
            await asyncio.sleep(0.01)

    host, port = base.removeprefix("http://").rsplit(":", 1)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(HOSTILE_BODY)}\r\nConnection: close\r\n\r\n"
    ).encode()

    async def attack() -> tuple[float, int]:
        """One hostile body on a raw connection (no client library in the figure): seconds
        from the first byte sent to the response head received, and the status."""
        reader, writer = await asyncio.open_connection(host, int(port))
        start = time.perf_counter()
        writer.write(head + HOSTILE_BODY)
        await writer.drain()
        status_line = await reader.readline()
        elapsed = time.perf_counter() - start
        writer.close()
        return elapsed, int(status_line.split()[1])

    async with httpx2.AsyncClient(base_url=base, timeout=60) as poller:
        await poller.get("/health")  # a connection open before timing
        before: list[float] = []
        stop = asyncio.Event()
        polling = asyncio.create_task(poll(poller, stop, before))
        await asyncio.sleep(1.0)
        stop.set()
        await polling
        stop = asyncio.Event()
        polling = asyncio.create_task(poll(poller, stop, health))
        answered, statuses = [], collections.Counter()
        for _ in range(options.bodies):
            elapsed, status = await attack()
            answered.append(elapsed)
            statuses[status] += 1
            await asyncio.sleep(0.05)
        stop.set()
        await polling

    def ms(values: list[float]) -> str:
        values = sorted(values) or [0.0]
        return f"p50 {statistics.median(values) * 1000:.1f} ms, max {values[-1] * 1000:.1f} ms"

    target = "tau-harness serve" if options.serve else "tau-server"
    print(
        f"{target}: {options.bodies} hostile bodies of {len(HOSTILE_BODY):,} bytes "
        f"(POST {path}) answered {dict(statuses)}: {ms(answered)}"
    )
    print(f"/health meanwhile: {len(health)} answered, {ms(health)}")
    print(f"/health before: {len(before)} answered, {ms(before)}")


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
    parser.add_argument("--serve", action="store_true", help="target `tau-harness serve`")
    parser.add_argument("--hostile", action="store_true", help="measure hostile bodies instead")
    parser.add_argument("--bodies", type=int, default=20, help="--hostile: bodies to send")
    options = parser.parse_args()
    random.seed(options.seed)
    proc = None
    if options.url:
        base = options.url.rstrip("/")
    else:
        base, proc = start_server(options.domain, options.server_arg, options.serve)
    if options.hostile:
        try:
            asyncio.run(asyncio.wait_for(hostile(base, options), MAX_RUN_SECONDS))
        finally:
            if proc is not None:
                stop(proc, timeout=10)
        return
    burners = start_burners(options.burners, MAX_RUN_SECONDS)
    try:
        start = time.perf_counter()
        tally = asyncio.run(run(base, options))
        elapsed = time.perf_counter() - start
    finally:
        for burner in burners:
            burner.terminate()
        if proc is not None:
            stop(proc, timeout=10)
    calls = len(tally.latencies)
    lat = sorted(tally.latencies) or [0.0]
    p99 = lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    target = "tau-harness serve" if options.serve else "tau-server"
    print(
        f"{target}: {options.clients} clients x {options.calls} calls ({options.domain}, think 0-"
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
