"""Benchmark tau-server on loopback: a real `tau-server serve` (uvicorn) in a subprocess.

Prints the p50 of an MCP tool call round trip over HTTP, the p50 of episode creation through
`POST /{domain}/episodes`, the server process's CPU per tool call next to the transport's floor
(an MCP `ping` and a plain `GET /health` on the same server), and calls per second with many
concurrent episodes.

    python scripts/bench_server.py [--domain airline] [--data-dir DIR] [--episodes 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


READ_CALL = {
    "mock": ("get_users", {}),
    "airline": ("get_user_details", {"user_id": "mia_li_3668"}),
    "retail": (
        "find_user_id_by_zip",
        {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
    ),
    "telecom": ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
}


def start_server(domain: str, data_dir: str | None) -> tuple[str, subprocess.Popen]:
    """`tau-server serve` (uvicorn) in its own process, so client and server do not share a GIL."""
    port = free_port()
    command = [
        sys.executable,
        "-c",
        "from tau_mcp.servers.cli import app; app()",
        "serve",
        "--port",
        str(port),
        "--domains",
        domain,
    ]
    if data_dir:
        command += ["--data-dir", data_dir]
    proc = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return base, proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("server did not start")


def rpc(method: str, params: dict, ident: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}).encode()


HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
PROTOCOL = "modern"
CONNECTIONS = 16  # client-side pool; httpx slows down sharply with hundreds of connections


async def open_session(client: httpx.AsyncClient, path: str) -> dict[str, str]:
    """Modern protocol: no handshake, every request carries its version. Legacy: the initialize
    handshake once per episode; later calls carry the Mcp-Session-Id."""
    if PROTOCOL == "modern":
        return {**HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    }
    response = await client.post(path, content=rpc("initialize", params, 0), headers=HEADERS)
    response.raise_for_status()
    headers = {
        **HEADERS,
        "mcp-session-id": response.headers["mcp-session-id"],
        "mcp-protocol-version": response.json()["result"]["protocolVersion"],
    }
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()
    (await client.post(path, content=note, headers=headers)).raise_for_status()
    return headers


async def tool_call(
    client: httpx.AsyncClient, path: str, headers: dict, name: str, args: dict, ident: int
) -> None:
    params: dict = {"name": name, "arguments": args}
    if PROTOCOL == "modern":
        params["_meta"] = MODERN_META
        headers = {**headers, "mcp-name": name}
    response = await client.post(path, content=rpc("tools/call", params, ident), headers=headers)
    response.raise_for_status()
    result = response.json()["result"]
    assert not result.get("isError"), result


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def server_cpu_per_request(pid: int, send, count: int) -> float:
    """Milliseconds of the server process's CPU per request, over `count` sequential requests
    (what the server spends, whatever the client and the machine's load add to the round trip)."""
    before = process_cpu(pid)
    for i in range(count):
        await send(i)
    return (process_cpu(pid) - before) * 1000 / count


def engine_cpu_per_call(domain: str, name: str, args: dict, data_dir: str | None, n: int) -> float:
    """Milliseconds of CPU per call of the same tool on the engine directly (no transport)."""
    from tau_mcp.servers.domains.registry import load_domains
    from tau_mcp.servers.engine.episode import EpisodeStore

    store = EpisodeStore(load_domains([domain], data_dir))
    episode = store.create(domain, None)
    started = time.process_time()
    for _ in range(n):
        with episode.lock:
            episode.call("agent", name, args)
    return (time.process_time() - started) * 1000 / n


DATA_DIR: str | None = None


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def run(domain: str, base: str, episodes: int, calls_each: int, pid: int) -> None:
    name, args = READ_CALL[domain]
    limits = httpx.Limits(max_connections=CONNECTIONS, max_keepalive_connections=CONNECTIONS)
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as client:
        created = []
        for _ in range(300):
            start = time.perf_counter()
            response = await client.post(f"/{domain}/episodes", json={})
            created.append(time.perf_counter() - start)
            response.raise_for_status()
        agent = response.json()["agent_mcp"]
        headers = await open_session(client, agent)
        await tool_call(client, agent, headers, name, args, 0)  # first call warms the path
        rtt = []
        for i in range(500):
            start = time.perf_counter()
            await tool_call(client, agent, headers, name, args, i + 1)
            rtt.append(time.perf_counter() - start)
        print(
            f"tool call round trip over HTTP ({domain}.{name}): p50 {p50_ms(rtt):.2f} ms, "
            f"p90 {statistics.quantiles(rtt, n=10)[-1] * 1000:.2f} ms"
        )
        print(f"episode creation via POST /{domain}/episodes: p50 {p50_ms(created):.2f} ms")

        async def call(i: int) -> None:
            await tool_call(client, agent, headers, name, args, i)

        async def health(i: int) -> None:
            (await client.get("/health")).raise_for_status()

        samples = 2000
        tool_cpu = await server_cpu_per_request(pid, call, samples)
        health_cpu = await server_cpu_per_request(pid, health, samples)
        goal = "met" if tool_cpu <= 1.0 else "NOT met"
        print(
            f"server CPU per tool call ({domain}.{name}, {PROTOCOL}): {tool_cpu:.2f} ms "
            f"(goal <= 1.0 ms: {goal})"
        )
        engine = engine_cpu_per_call(domain, name, args, DATA_DIR, samples)
        print(
            f"  of which: the engine's own work {engine:.3f} ms; HTTP floor (uvicorn + starlette "
            f"+ middleware, GET /health) {health_cpu:.2f} ms; the MCP layer (reading the "
            f"JSON-RPC request, the short path of servers/fast_calls.py, the response) the rest, {tool_cpu - engine - health_cpu:.2f} ms"
        )

        paths = [
            (await client.post(f"/{domain}/episodes", json={})).json()["agent_mcp"]
            for _ in range(episodes)
        ]

        sessions = [(p, await open_session(client, p)) for p in paths]

        async def worker(path: str, session: dict) -> None:
            for i in range(calls_each):
                await tool_call(client, path, session, name, args, i)

        start = time.perf_counter()
        await asyncio.gather(*(worker(p, h) for p, h in sessions))
        elapsed = time.perf_counter() - start
        print(
            f"{episodes} concurrent episodes x {calls_each} calls: {episodes * calls_each / elapsed:.0f} calls/s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domain", default="airline")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument(
        "--protocol",
        choices=("modern", "legacy"),
        default="modern",
        help="modern: sessionless 2026-07-28; legacy: initialize + Mcp-Session-Id",
    )
    options = parser.parse_args()
    global PROTOCOL, DATA_DIR
    PROTOCOL, DATA_DIR = options.protocol, options.data_dir
    print(f"protocol: {PROTOCOL}")
    base, proc = start_server(options.domain, options.data_dir)
    try:
        asyncio.run(run(options.domain, base, options.episodes, options.calls, proc.pid))
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
