"""Benchmark tau-server on loopback: a real `tau-server serve` (uvicorn) in a subprocess.

Prints the p50 of an MCP tool call round trip over HTTP, the p50 of episode creation through
`POST /{domain}/episodes`, the server process's CPU per tool call next to the transport's floor
(an MCP `ping` and a plain `GET /health` on the same server), and calls per second with many
concurrent episodes.

With `--reference PYTHON` (an interpreter that can import the reference tau2-bench, installed
outside this repository), it instead runs the reference's own REST environment server
(`tau2.environment.server.EnvironmentServer`, served as the reference serves it: its `run()`,
uvicorn's defaults) beside `tau-server serve`, and measures each server process's CPU per
equivalent tool call (the reference: `POST /tools/{name}` with the arguments; ours: a
sessionless MCP `tools/call` on an episode's agent endpoint) in interleaved rounds, the order
alternating, with the load average printed at every round. CPU is read from
`/proc/PID/task/*/schedstat` (nanoseconds on the CPU, every thread of the process).

    python scripts/bench_server.py [--domain airline] [--data-dir DIR] [--episodes 200]
    python scripts/bench_server.py --reference /tmp/ref-venv/bin/python [--rounds 20] [--round-calls 500] [--inflight 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import subprocess
import time

import httpx
from serving import Wait, free_port, serve_command, start_tau_server, stop, wait_until_up

READ_CALL = {
    "mock": ("get_users", {}),
    "airline": ("get_user_details", {"user_id": "mia_li_3668"}),
    "retail": (
        "find_user_id_by_name_zip",
        {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
    ),
    "telecom": ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
}


def start_server(domain: str, data_dir: str | None) -> tuple[str, subprocess.Popen]:
    """`tau-server serve` (uvicorn) in its own process, so client and server do not share a GIL."""
    args = ["--domains", domain] + (["--data-dir", data_dir] if data_dir else [])
    return start_tau_server(args, Wait(interval=0.1))


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


# --- side by side with the reference's REST server -----------------------------------------
# Run by the reference's interpreter: its environment server for one domain, served by its own
# `run()` (uvicorn with its defaults) on the given port.
REFERENCE_SERVER = """
import sys
from tau2.environment.server import EnvironmentServer
from tau2.registry import registry
EnvironmentServer(registry.get_env_constructor(sys.argv[1])()).run(host="127.0.0.1", port=int(sys.argv[2]))
"""


def tool_text_value(text: str):
    """A tool result's text as a value: JSON when it is JSON, else the text (a plain string)."""
    try:
        return json.loads(text)
    except ValueError:
        return text


_ISO_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def rest_datetimes(value):
    """The REST server's answer with its datetimes as the tool text writes them: FastAPI writes
    `2025-01-15T10:30:00`, the text the reference shows a model (and tau-server's) `str()`'s
    `2025-01-15 10:30:00`."""
    if isinstance(value, dict):
        return {key: rest_datetimes(item) for key, item in value.items()}
    if isinstance(value, list):
        return [rest_datetimes(item) for item in value]
    if isinstance(value, str) and _ISO_DATETIME.match(value):
        return value.replace("T", " ", 1)
    return value


def cpu_ns(pid: int) -> int:
    """Nanoseconds every thread of a process has spent on a CPU (Linux schedstat)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as fh:
                total += int(fh.read().split()[0])
        except FileNotFoundError:  # a thread that just ended
            pass
    return total


class Caller:
    """Kept-alive connections to one server, each making one request at a time (`inflight`
    of them at once, on threads): what the server spends per request."""

    def __init__(
        self, port: int, pid: int, path: str, body: bytes | None, headers: dict, inflight: int
    ) -> None:
        self.port, self.pid, self.path, self.body, self.headers = port, pid, path, body, headers
        self.method = "GET" if body is None else "POST"
        self.connections = [self._connect() for _ in range(inflight)]

    def _connect(self):
        import http.client

        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def call(self, index: int = 0) -> bytes:
        connection = self.connections[index]
        connection.request(self.method, self.path, body=self.body, headers=self.headers)
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            raise SystemExit(f"{self.path} answered {response.status}: {data[:300]!r}")
        return data

    def reconnect(self) -> None:
        """Fresh connections (not counted): the reference's server (uvicorn's defaults) closes
        one idle for 5 s, as they may be while the other server is measured."""
        for index, connection in enumerate(self.connections):
            connection.close()
            self.connections[index] = self._connect()
            self.call(index)

    def cpu_per_call_ms(self, calls: int) -> float:
        """The server's CPU per call over `calls` calls, `inflight` at a time."""
        from concurrent.futures import ThreadPoolExecutor

        self.reconnect()
        share = calls // len(self.connections)

        def run(index: int) -> None:
            for _ in range(share):
                self.call(index)

        before = cpu_ns(self.pid)
        if len(self.connections) == 1:
            run(0)
        else:
            with ThreadPoolExecutor(len(self.connections)) as pool:
                list(pool.map(run, range(len(self.connections))))
        return (cpu_ns(self.pid) - before) / 1e6 / (share * len(self.connections))


def compare_with_reference(options: argparse.Namespace) -> None:
    import http.client

    domain = options.domain
    name, arguments = READ_CALL[domain]
    env = dict(os.environ)
    if options.data_dir:
        env["TAU2_DATA_DIR"] = options.data_dir
    ref_port, our_port = free_port(), free_port()
    reference = subprocess.Popen(
        [options.reference, "-c", REFERENCE_SERVER, domain, str(ref_port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    args = ["--domains", domain] + (["--data-dir", options.data_dir] if options.data_dir else [])
    ours = subprocess.Popen(
        serve_command(our_port, args),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for port, proc, what, path in (
            (ref_port, reference, "the reference's server", "/api/openapi.json"),
            (our_port, ours, "tau-server", "/health"),
        ):
            wait = Wait(
                seconds=180,
                probe_timeout=2,
                failure=f"{what} did not start within 180 s",
                exited=f"{what} exited at start ({{code}})",
                path=path,
            )
            wait_until_up(f"http://127.0.0.1:{port}", wait, proc)
        connection = http.client.HTTPConnection("127.0.0.1", our_port, timeout=60)
        connection.request(
            "POST", f"/{domain}/episodes", body=b"{}", headers={"content-type": "application/json"}
        )
        agent = json.loads(connection.getresponse().read())["agent_mcp"]
        connection.close()
        params = {"name": name, "arguments": arguments, "_meta": MODERN_META}
        mcp_headers = {
            **HEADERS,
            "mcp-protocol-version": "2026-07-28",
            "mcp-method": "tools/call",
            "mcp-name": name,
        }
        callers = {
            "reference REST": Caller(
                ref_port,
                reference.pid,
                f"/tools/{name}",
                json.dumps(arguments).encode(),
                {"content-type": "application/json"},
                options.inflight,
            ),
            "tau-server MCP": Caller(
                our_port,
                ours.pid,
                agent,
                rpc("tools/call", params, 1),
                mcp_headers,
                options.inflight,
            ),
            "tau-server GET /health": Caller(
                our_port, ours.pid, "/health", None, {}, options.inflight
            ),
        }
        reference_value = rest_datetimes(json.loads(callers["reference REST"].call()))
        ours_value = tool_text_value(
            json.loads(callers["tau-server MCP"].call())["result"]["content"][0]["text"]
        )
        same = "the same" if reference_value == ours_value else "DIFFERENT"
        print(f"{domain}.{name}({json.dumps(arguments)}): both servers answer {same} value")
        for caller in callers.values():  # warm up: first calls, caches, allocator
            for _ in range(300):
                caller.call()
        print(
            f"{options.rounds} rounds, each of {options.round_calls} calls ({options.inflight} in "
            f"flight) to each server in turn (the order alternating); server CPU per call "
            f"(schedstat), {os.cpu_count()} cores:"
        )
        samples: dict[str, list[float]] = {label: [] for label in callers}
        ratios = []
        for round_ in range(options.rounds):
            load = os.getloadavg()[0]
            order = list(callers) if round_ % 2 == 0 else list(callers)[::-1]
            got = {label: callers[label].cpu_per_call_ms(options.round_calls) for label in order}
            for label, value in got.items():
                samples[label].append(value)
            ref_ms, our_ms = got["reference REST"], got["tau-server MCP"]
            ratios.append(ref_ms / our_ms)
            print(
                f"  round {round_ + 1:>2} (load {load:.2f}): reference {ref_ms:.3f} ms, "
                f"tau-server {our_ms:.3f} ms, {ratios[-1]:.2f}x "
                f"(its HTTP floor, GET /health: {got['tau-server GET /health']:.3f} ms)",
                flush=True,
            )
        ref_ms = statistics.median(samples["reference REST"])
        our_ms = statistics.median(samples["tau-server MCP"])
        floor_ms = statistics.median(samples["tau-server GET /health"])
        ratio = ref_ms / our_ms
        verdict = "met" if ratio >= 3 else "NOT met"
        print(
            f"median: reference {ref_ms:.3f} ms, tau-server {our_ms:.3f} ms per call: "
            f"{ratio:.2f}x less CPU (median of the rounds' ratios {statistics.median(ratios):.2f}x; "
            f"goal >= 3x: {verdict}); tau-server's HTTP floor (GET /health) {floor_ms:.3f} ms; "
            f"load average {os.getloadavg()[0]:.2f} at the end"
        )
    finally:
        for proc in (reference, ours):
            proc.terminate()
        for proc in (reference, ours):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


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
    parser.add_argument(
        "--reference",
        metavar="PYTHON",
        help="compare with the reference's REST server, run by this interpreter (tau2 importable)",
    )
    parser.add_argument("--rounds", type=int, default=20, help="--reference: interleaved rounds")
    parser.add_argument(
        "--inflight", type=int, default=1, help="--reference: calls in flight to each server"
    )
    parser.add_argument("--round-calls", type=int, default=500, help="--reference: calls per round")
    options = parser.parse_args()
    if options.reference:
        compare_with_reference(options)
        return
    global PROTOCOL, DATA_DIR
    PROTOCOL, DATA_DIR = options.protocol, options.data_dir
    print(f"protocol: {PROTOCOL}")
    base, proc = start_server(options.domain, options.data_dir)
    try:
        asyncio.run(run(options.domain, base, options.episodes, options.calls, proc.pid))
    finally:
        stop(proc, timeout=10)


if __name__ == "__main__":
    main()
