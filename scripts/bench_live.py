"""Many live episodes: N episodes held open at once, each stepping (one MCP tool call) about
every PERIOD seconds (OpenEnv's shape), carried over one aiohttp client's pooled connections.

It creates the episodes (client-chosen ids, `POST /{domain}/episodes`), then lets every episode
call a read tool on its own endpoint every PERIOD s (random phase, so the calls spread evenly)
for DURATION s, and prints: how many calls were answered (HTTP 200 and a tool result that is
not an error) and their latency percentiles; the server's memory (RSS and PSS summed over its
processes) before and after the episodes were created, per live episode; the server's and the
client's CPU per call; and the machine's load average.

Without `--server` it starts `tau-server serve` itself (with `--workers N` when given), with its
episode cap and connection cap raised to fit the run (`--capacity`, `--max-connections`: the
defaults, 20,000 episodes and 1,000 connections, are the server's). With `--server URL` it
drives a server already running (the multi-node setup behind a load balancer); `--pid PID`
(repeatable) names the server processes whose memory and CPU to count (their children too).

    python scripts/bench_live.py [--episodes 16384] [--period 10] [--duration 60]
                                 [--connections 512] [--domain mock] [--workers N]
                                 [--server URL --pid PID ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import time

import aiohttp
from serving import start_tau_server, stop

READ_CALL = {
    "mock": ("get_users", {}),
    "airline": ("get_user_details", {"user_id": "mia_li_3668"}),
    "retail": (
        "find_user_id_by_zip",
        {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
    ),
    "telecom": ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
}
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench-live", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
TIMEOUT_S = 30.0


# --- the server's processes --------------------------------------------------------------------
def tree(pids: list[int]) -> list[int]:
    """The processes and all their descendants (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                parent = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry))
    seen: list[int] = []
    stack = list(pids)
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.append(pid)
        stack.extend(children.get(pid, []))
    return seen


def cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mb(pids: list[int]) -> tuple[float, float]:
    """(RSS, PSS) in MB summed over the processes (PSS counts pages shared by forked workers
    once in total)."""
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            continue
    return rss / 1024, pss / 1024


def start_server(args: argparse.Namespace) -> tuple[str, subprocess.Popen]:
    server_args = ["--domains", args.domain]
    server_args += ["--capacity", str(max(20_000, int(args.episodes * 1.25)))]
    server_args += ["--max-connections", str(max(1_000, args.connections + 64))]
    server_args += ["--workers", str(args.workers)]
    if args.data_dir:
        server_args += ["--data-dir", args.data_dir]
    return start_tau_server(server_args)


def percentile(samples: list[float], share: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000


# --- the load ------------------------------------------------------------------------------------
class Tally:
    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.failures: dict[str, int] = {}
        self.calls = 0
        self.late: list[float] = []

    def fail(self, why: str) -> None:
        self.failures[why] = self.failures.get(why, 0) + 1

    @property
    def ok(self) -> int:
        return len(self.latencies)


async def create_all(
    session: aiohttp.ClientSession, base: str, domain: str, ids: list[str], concurrency: int
) -> Tally:
    tally = Tally()
    queue = iter(ids)

    async def creator() -> None:
        for episode in queue:
            tally.calls += 1
            started = time.perf_counter()
            try:
                async with session.post(
                    f"{base}/{domain}/episodes", json={"episode_id": episode}
                ) as answer:
                    await answer.read()
                    if answer.status != 201:
                        tally.fail(f"HTTP {answer.status}")
                        continue
            except (aiohttp.ClientError, TimeoutError) as exc:
                tally.fail(type(exc).__name__)
                continue
            tally.latencies.append(time.perf_counter() - started)

    await asyncio.gather(*(creator() for _ in range(concurrency)))
    return tally


async def step_all(
    session: aiohttp.ClientSession,
    base: str,
    domain: str,
    ids: list[str],
    period: float,
    duration: float,
) -> Tally:
    tally = Tally()
    name, arguments = READ_CALL[domain]
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    loop = asyncio.get_running_loop()
    end = loop.time() + duration

    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": MODERN_META},
        }
    ).encode()

    async def live(episode: str) -> None:
        url = f"{base}/{domain}/episodes/{episode}/agent/mcp"
        due = loop.time() + random.uniform(0, period)
        while due < end:
            await asyncio.sleep(max(0.0, due - loop.time()))
            tally.late.append(loop.time() - due)
            tally.calls += 1
            started = time.perf_counter()
            try:
                async with session.post(url, data=body, headers=headers) as answer:
                    payload = await answer.read()
                    if answer.status != 200:
                        tally.fail(f"HTTP {answer.status}")
                    elif json.loads(payload).get("result", {}).get("isError"):
                        tally.fail("tool error")
                    else:
                        tally.latencies.append(time.perf_counter() - started)
            except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                tally.fail(type(exc).__name__)
            due += period

    await asyncio.gather(*(live(episode) for episode in ids))
    return tally


async def front_pids(session: aiohttp.ClientSession, base: str, processes: list[int]) -> list[int]:
    """The processes of `tau-server serve --workers N` that are not workers (the front and the
    idle supervisor), when the server reports its workers; else none."""
    try:
        async with session.get(base + "/health") as answer:
            report = await answer.json(content_type=None)
    except (aiohttp.ClientError, ValueError):
        return []
    workers = {w.get("pid") for w in report.get("workers") or [] if isinstance(w, dict)}
    if not workers:
        return []
    return [p for p in processes if p not in workers]


async def run(args: argparse.Namespace, base: str, pids: list[int]) -> None:
    connector = aiohttp.TCPConnector(limit=args.connections, keepalive_timeout=30)
    timeout = aiohttp.ClientTimeout(total=TIMEOUT_S)
    ids = [f"live-{args.tag}-{i}" for i in range(args.episodes)]
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # warm: one episode created and called, so lazy start-up work is not counted
        await create_all(session, base, args.domain, [f"warm-{args.tag}"], 1)
        processes = tree(pids)
        rss0, pss0 = memory_mb(processes)
        started = time.perf_counter()
        created = await create_all(session, base, args.domain, ids, args.create_concurrency)
        took = time.perf_counter() - started
        processes = tree(pids)
        rss1, pss1 = memory_mb(processes)
        live = created.ok
        print(
            f"created {live:,} of {len(ids):,} episodes in {took:.1f} s ({live / took:,.0f}/s); "
            f"create p50 {percentile(created.latencies, 0.5):.1f} ms, "
            f"p99 {percentile(created.latencies, 0.99):.1f} ms; failures {created.failures or 0}"
        )
        print(
            f"server memory (RSS / PSS, {len(processes)} processes): before {rss0:,.1f} / "
            f"{pss0:,.1f} MB, with {live:,} live episodes {rss1:,.1f} / {pss1:,.1f} MB: "
            f"{(rss1 - rss0) * 1024 / max(live, 1):.2f} / {(pss1 - pss0) * 1024 / max(live, 1):.2f} "
            "KB per live episode"
        )
        front = await front_pids(session, base, processes)
        front_cpu0 = sum(cpu_seconds(p) for p in front)
        server_cpu0 = sum(cpu_seconds(p) for p in processes)
        client_cpu0 = time.process_time()
        load0 = os.getloadavg()
        started = time.perf_counter()
        stepped = await step_all(session, base, args.domain, ids[:live], args.period, args.duration)
        wall = time.perf_counter() - started
        server_cpu = sum(cpu_seconds(p) for p in processes) - server_cpu0
        front_cpu = sum(cpu_seconds(p) for p in front) - front_cpu0
        client_cpu = time.process_time() - client_cpu0
        load1 = os.getloadavg()
        rss2, pss2 = memory_mb(tree(pids))
    calls = stepped.calls
    share = stepped.ok / calls * 100 if calls else 0.0
    print(
        f"stepping: {calls:,} tool calls in {wall:.1f} s ({calls / wall:,.0f}/s; one per episode "
        f"every {args.period:g} s is {live / args.period:,.0f}/s) over at most "
        f"{args.connections} pooled connections"
    )
    print(
        f"answered: {stepped.ok:,} of {calls:,} ({share:.2f} %); failures "
        f"{stepped.failures or 0}; latency p50 {percentile(stepped.latencies, 0.5):.1f} ms, "
        f"p90 {percentile(stepped.latencies, 0.9):.1f} ms, p99 "
        f"{percentile(stepped.latencies, 0.99):.1f} ms, max "
        f"{percentile(stepped.latencies, 1.0):.1f} ms; client lateness p99 "
        f"{percentile(stepped.late, 0.99):.1f} ms"
    )
    print(
        f"CPU per call: server {server_cpu * 1000 / max(calls, 1):.3f} ms (all its processes"
        + (f"; the front {front_cpu * 1000 / max(calls, 1):.3f} ms of it" if front else "")
        + "), "
        f"client {client_cpu * 1000 / max(calls, 1):.3f} ms; server memory after stepping "
        f"{rss2:,.1f} / {pss2:,.1f} MB (RSS / PSS)"
    )
    print(
        f"load average (1 min) {load0[0]:.2f} before stepping, {load1[0]:.2f} after; "
        f"{os.cpu_count()} CPUs, of which the server used {server_cpu / wall:.2f} and the client "
        f"{client_cpu / wall:.2f} while stepping"
    )
    print(f"goal: >= 99 % answered: {'met' if share >= 99 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=16_384)
    parser.add_argument("--period", type=float, default=10.0, help="seconds between steps")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of stepping")
    parser.add_argument("--connections", type=int, default=512, help="the client's pool")
    parser.add_argument("--create-concurrency", type=int, default=256)
    parser.add_argument("--domain", default="mock", choices=sorted(READ_CALL))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--workers", default="1", help="tau-server serve --workers")
    parser.add_argument("--server", default=None, help="a running server's base URL")
    parser.add_argument("--pid", type=int, action="append", default=[], help="its processes")
    parser.add_argument("--tag", default=str(os.getpid()), help="episode id prefix")
    args = parser.parse_args()
    proc = None
    if args.server:
        base, pids = args.server.rstrip("/"), args.pid
    else:
        base, proc = start_server(args)
        pids = [proc.pid]
    print(
        f"{args.episodes:,} live episodes ({args.domain}), one tool call each every "
        f"{args.period:g} s for {args.duration:g} s; server {base}"
        + ("" if args.server else f" (tau-server serve --workers {args.workers})")
    )
    try:
        asyncio.run(run(args, base, pids))
    finally:
        if proc is not None:
            stop(proc, timeout=60)


if __name__ == "__main__":
    main()
