"""The harness's HTTP client to tau-server: client CPU per request as requests in flight grow.

A real `tau-server serve` runs in a subprocess on loopback; each measurement runs in a child
process of its own (so one client's leftovers never weigh on another's figure) and drives the
server the way the harness does: the harness's lean MCP client (`WireMcpSession`, one
`tools/call` POST per call) on an exchange, N tool calls in flight at once, each on an episode
of its own. Two clients:

- `httpx2`: the harness's client before issue 35 (an `httpx2.AsyncClient` on the harness's
  `SafeRetryTransport`, unbounded connections, 20 kept alive), rebuilt here as it was;
- `aiohttp`: the harness's client now, `tau_mcp.harness.backends.exchange.HttpExchange`.

Measured per level and client, interleaved (the order alternates level by level): the client
process's CPU per answered request (user + system, `time.process_time`) over the measured
calls, after a warm-up round in which every caller makes one call, the wall time and
requests/s, the server process's CPU per request, the connections the client held open at the
end, and the requests that failed (shown with the first error). The ratio to the
client's own 64-in-flight figure is printed next to the goal (within 1.5x).

`--agent cmd`'s own HTTP client to tau-server is this same exchange (its hosted simulations run
on the run's backend); the outside program's client is not ours.

The soft open-file limit is raised to the hard limit in this process (and so in the server and
the children), and the server is started with `--max-connections` above the largest level: the
old client opens one connection per request in flight.

    python scripts/bench_client.py [--levels 64,512,2048,4096] [--clients httpx2,aiohttp]
        [--requests 8000] [--domain airline] [--data-dir DIR] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from serving import Wait, start_tau_server, stop

CLIENTS = ("httpx2", "aiohttp")
READ_CALL = {
    "mock": ("get_users", {}),
    "airline": ("get_user_details", {"user_id": "mia_li_3668"}),
}
GOAL_RATIO = 1.5


def raise_open_files() -> tuple[int, int]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_sockets() -> int:
    count = 0
    for entry in os.scandir("/proc/self/fd"):
        try:
            count += os.readlink(entry.path).startswith("socket:")
        except OSError:
            pass
    return count


# --- the old client, as the harness built it before issue 35 -------------------------------
class Httpx2Exchange:
    """`HttpExchange.send` as it was: httpx2 on the harness's `SafeRetryTransport` (whose pool
    allowed any number of connections and kept 20 alive); the dead-server logic, which costs
    nothing while the server answers, is left out."""

    def __init__(self, base_url: str) -> None:
        import httpx2

        from tau_mcp.harness.backends.sdk_transport import SafeRetryTransport

        self.base_url = base_url
        self.client = httpx2.AsyncClient(
            base_url=base_url,
            timeout=httpx2.Timeout(120.0, connect=10.0),
            transport=SafeRetryTransport(set()),
        )

    async def send(self, method, path, body=None, headers=(), *, resend_safe=False):
        from tau_mcp.harness.backends.exchange import Reply

        request_headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]
        response = await self.client.request(method, path, content=body, headers=request_headers)
        return Reply(
            response.status_code, response.headers.get("content-type", ""), response.content
        )

    async def aclose(self) -> None:
        await self.client.aclose()


def make_exchange(kind: str, base: str):
    if kind == "httpx2":
        return Httpx2Exchange(base)
    from tau_mcp.harness.backends.exchange import HttpExchange

    return HttpExchange(base, {}, set())


# --- one measurement (a child process) ------------------------------------------------------
async def measure(kind: str, base: str, pid: int, inflight: int, requests: int, domain: str):
    from tau_mcp.harness.backends.base import ToolInfo
    from tau_mcp.harness.backends.mcp_wire import WireMcpSession

    name, arguments = READ_CALL[domain]
    exchange = make_exchange(kind, base)
    json_body = ((b"content-type", b"application/json"),)
    gate = asyncio.Semaphore(64)

    async def create() -> str:
        async with gate:
            reply = await exchange.send("POST", f"/{domain}/episodes", b"{}", json_body)
        assert reply.status == 201, reply
        return json.loads(reply.body)["agent_mcp"]

    async def delete(path: str) -> None:
        async with gate:
            try:
                await exchange.send("DELETE", path.rsplit("/", 2)[0])
            except Exception:  # noqa: BLE001, S110 - the server forgets it at exit anyway
                pass

    try:
        paths = await asyncio.gather(*(create() for _ in range(inflight)))
        tools = [ToolInfo(name, "", {})]
        sessions = [WireMcpSession(exchange, path, tools) for path in paths]
        per_caller = max(2, -(-requests // inflight))

        failures: list[str] = []

        async def caller(session: WireMcpSession, calls: int) -> None:
            for _ in range(calls):
                try:
                    result = await session.call_tool(name, arguments)
                    assert not result.error, result.text
                except Exception as exc:  # noqa: BLE001 - counted and shown, not fatal
                    failures.append(f"{type(exc).__name__}: {exc}"[:200])

        await asyncio.gather(*(caller(s, 1) for s in sessions))  # warm-up: connections open
        warmup_failures = len(failures)
        failures.clear()
        server_before, cpu_before = process_cpu(pid), time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(caller(s, per_caller) for s in sessions))
        wall = time.perf_counter() - started
        cpu, server = time.process_time() - cpu_before, process_cpu(pid) - server_before
        sockets = open_sockets()
        await asyncio.gather(*(delete(path) for path in paths))
    finally:
        await exchange.aclose()
    total = per_caller * inflight
    answered = max(1, total - len(failures))
    return {
        "client": kind,
        "inflight": inflight,
        "requests": total,
        "failed": len(failures),
        "warmup_failed": warmup_failures,
        "first_failure": failures[0] if failures else None,
        "client_ms": cpu * 1000 / answered,
        "server_ms": server * 1000 / answered,
        "wall_s": wall,
        "rps": answered / wall,
        "sockets": sockets,
    }


def child(options: argparse.Namespace) -> None:
    outcome = asyncio.run(
        measure(
            options.one,
            options.base,
            options.server_pid,
            options.inflight,
            options.requests,
            options.domain,
        )
    )
    print(json.dumps(outcome))


# --- the whole benchmark --------------------------------------------------------------------
def start_server(domain: str, data_dir: str | None, cap: int) -> tuple[str, subprocess.Popen]:
    args = ["--domains", domain, "--max-connections", str(cap)]
    args += ["--data-dir", data_dir] if data_dir else []
    return start_tau_server(
        args, Wait(interval=0.1, failure="tau-server did not start within 120 s")
    )


def run_one(kind: str, base: str, pid: int, inflight: int, options: argparse.Namespace) -> dict:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--one",
        kind,
        "--base",
        base,
        "--server-pid",
        str(pid),
        "--inflight",
        str(inflight),
        "--requests",
        str(options.requests),
        "--domain",
        options.domain,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"{kind} at {inflight} in flight failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="64,512,2048,4096")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--requests", type=int, default=8000, help="measured calls per level")
    parser.add_argument("--domain", default="airline", choices=sorted(READ_CALL))
    parser.add_argument("--data-dir", default=os.environ.get("TAU2_DATA_DIR"))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--one", choices=CLIENTS, help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--server-pid", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--inflight", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        child(options)
        return
    levels = [int(x) for x in options.levels.split(",")]
    clients = options.clients.split(",")
    soft, hard = raise_open_files()
    cap = max(levels) * 2 + 100
    print(f"open files: soft limit raised to {soft} (hard {hard}); server --max-connections {cap}")
    print(f"load average before: {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    base, proc = start_server(options.domain, options.data_dir, cap)
    results: dict[tuple[str, int], list[dict]] = {}
    try:
        for round_ in range(options.rounds):
            for index, inflight in enumerate(levels):
                order = clients if (index + round_) % 2 == 0 else clients[::-1]
                for kind in order:
                    outcome = run_one(kind, base, proc.pid, inflight, options)
                    results.setdefault((kind, inflight), []).append(outcome)
                    failed = ""
                    if outcome["failed"] or outcome["warmup_failed"]:
                        failed = (
                            f", {outcome['failed']} of {outcome['requests']} failed "
                            f"({outcome['warmup_failed']} in the warm-up round), first: "
                            f"{outcome['first_failure']}"
                        )
                    print(
                        f"  {kind:>7} {inflight:>5} in flight: client {outcome['client_ms']:.3f} "
                        f"ms/request, server {outcome['server_ms']:.3f} ms/request, "
                        f"{outcome['rps']:.0f} requests/s, {outcome['sockets']} sockets open "
                        f"(load {os.getloadavg()[0]:.2f}){failed}",
                        flush=True,
                    )
    finally:
        stop(proc, timeout=30)
    print(f"\nclient CPU per request (median of {options.rounds} round(s)), {options.domain}:")
    for kind in clients:
        base_ms = _median([r["client_ms"] for r in results[(kind, levels[0])]])
        cells = []
        worst = 0.0
        for inflight in levels:
            runs = results[(kind, inflight)]
            value = _median([r["client_ms"] for r in runs])
            ratio = value / base_ms
            failed = sum(r["failed"] + r["warmup_failed"] for r in runs)
            if inflight != levels[0]:
                worst = max(worst, ratio)
            worst = worst if not failed else float("inf")
            lost = f", {failed} failed" if failed else ""
            cells.append(f"{inflight}: {value:.3f} ms ({ratio:.2f}x{lost})")
        verdict = "met" if worst <= GOAL_RATIO else "NOT met"
        print(f"  {kind:>7}: " + "; ".join(cells) + f"  [within {GOAL_RATIO}x: {verdict}]")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


if __name__ == "__main__":
    main()
