"""What putting tau-server past one machine costs per request, by the two engines issue 35
names: Ray Serve (the tau-server app as a Serve ingress deployment, behind Serve's HTTP proxy)
and HAProxy (configured by `tau-server lb-config`, in front of a `tau-server serve` node).

Each setup gets the same N sequential requests on one keep-alive connection
(`GET /mock/episodes/{id}/hash`, a cheap route, so the layer in front weighs most), after 200
warm-up ones; it prints the CPU per request of every process on the server side (read from
/proc) and the round trip. Ray's processes also burn CPU when idle (heartbeats, the Serve
controller's loop): that rate is measured over an idle interval first and subtracted.

For the third design the issue names, a load balancer with the episodes in a shared store, it
prints what one episode's state weighs per domain (`GET /{domain}/episodes/{id}/state`, a fresh
episode) and the CPU to serialise and parse it once with the standard json module: the least a
stateless server would pay to load and store an episode around every tool call.

    python scripts/bench_ray_serve.py [--requests 3000] [--skip ray|haproxy|store]

Ray Serve needs `pip install "ray[serve]"` (not one of tau-mcp's extras: only this bench uses it).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_live import cpu_seconds, tree  # noqa: E402
from serving import (  # noqa: E402
    TAU_SERVER,
    Wait,
    free_port,
    raw_request,
    start_server,
    stop,
    wait_until_up,
)

EPISODE = "serve-bench"
WARM_UP = 200
STORE_DOMAINS = ("airline", "retail", "telecom")


def health_wait(what: str) -> Wait:
    return Wait(seconds=180, probe_timeout=2, failure=f"{what} did not answer /health")


def create_episode(base: str) -> None:
    create = urllib.request.Request(
        base + "/mock/episodes",
        data=json.dumps({"episode_id": EPISODE}).encode(),
        headers={"content-type": "application/json"},
    )
    urllib.request.urlopen(create, timeout=30).close()


def drive(port: int, count: int, pids, idle_rate: float = 0.0) -> tuple[float, float]:
    """CPU ms per request of `pids()` (net of `idle_rate` cores) and the round trip in ms."""
    request = f"GET /mock/episodes/{EPISODE}/hash HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n".encode()
    with socket.create_connection(("127.0.0.1", port)) as sock:

        def one() -> None:
            head, _ = raw_request(sock, request)
            if not head.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"unexpected answer: {head[:200]!r}")

        for _ in range(WARM_UP):
            one()
        processes = pids()
        cpu0 = sum(cpu_seconds(p) for p in processes)
        started = time.perf_counter()
        for _ in range(count):
            one()
        wall = time.perf_counter() - started
        cpu = sum(cpu_seconds(p) for p in processes) - cpu0 - idle_rate * wall
    return cpu * 1000 / count, wall * 1000 / count


def serve_command(host: str, port: int, data_dir: str | None) -> list[str]:
    command = [*TAU_SERVER, "serve", "--host", host, "--port", str(port), "--domains", "mock"]
    return command + (["--data-dir", data_dir] if data_dir else [])


def direct_and_haproxy(args: argparse.Namespace) -> float:
    """Prints both figures; returns the direct one (ms CPU per request)."""
    port = free_port()
    base, node = start_server(
        serve_command("127.0.0.1", port, args.data_dir),
        port,
        health_wait("tau-server"),
        stderr=None,
    )
    procs = [node]
    try:
        create_episode(base)
        server_ms, trip = drive(port, args.requests, lambda: tree([node.pid]))
        print(
            f"direct: tau-server (one process) {server_ms:.3f} ms CPU per request; "
            f"round trip {trip:.3f} ms; load average {os.getloadavg()[0]:.2f}"
        )
        haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
        if "haproxy" in args.skip or not os.path.exists(haproxy):
            print("HAProxy: skipped" + ("" if "haproxy" in args.skip else " (not installed)"))
            return server_ms
        from tau_mcp.servers.lb_config import haproxy_config

        front = free_port()
        config = Path(tempfile.mkdtemp()) / "haproxy.cfg"
        config.write_text(haproxy_config([f"127.0.0.1:{port}"], f"127.0.0.1:{front}"))
        lb = subprocess.Popen([haproxy, "-f", str(config), "-db"], stderr=subprocess.DEVNULL)
        procs.append(lb)
        wait_until_up(f"http://127.0.0.1:{front}", health_wait("HAProxy"), lb)

        lb_ms, trip = drive(front, args.requests, lambda: [lb.pid])
        print(
            f"HAProxy in front of that tau-server: HAProxy's own {lb_ms:.3f} ms CPU per request; "
            f"round trip {trip:.3f} ms; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        return server_ms
    finally:
        for proc in procs:
            stop(proc, timeout=60)


def store_cost(args: argparse.Namespace, request_ms: float) -> None:
    if "store" in args.skip:
        print("shared store: skipped")
        return
    port = free_port()
    command = serve_command("127.0.0.1", port, args.data_dir)
    command[command.index("mock")] = ",".join(STORE_DOMAINS)
    base, node = start_server(
        command, port, health_wait("tau-server"), stdout=subprocess.DEVNULL, stderr=None
    )
    try:
        for domain in STORE_DOMAINS:
            create = urllib.request.Request(
                f"{base}/{domain}/episodes",
                data=b"{}",
                headers={"content-type": "application/json"},
            )
            with urllib.request.urlopen(create, timeout=60) as answer:
                episode = json.load(answer)["episode_id"]
            with urllib.request.urlopen(f"{base}/{domain}/episodes/{episode}/state") as answer:
                body = answer.read()
            rounds = 20
            started = time.process_time()
            for _ in range(rounds):
                json.dumps(json.loads(body))
            per = (time.process_time() - started) * 1000 / rounds
            print(
                f"shared store, {domain}: one episode's state is {len(body) / 1024:,.0f} KB; "
                f"parsing and serialising it once costs {per:.1f} ms CPU "
                f"(the direct request above: {request_ms:.3f} ms)"
            )
    finally:
        stop(node, timeout=60)


def build_tau_app():
    """Runs in the Serve replica: the same app `tau-server serve` runs."""
    from tau_mcp.servers.app import create_app

    return create_app(domain_names=["mock"], data_dir=os.environ.get("TAU2_DATA_DIR"))


def ray_serve(args: argparse.Namespace) -> None:
    if "ray" in args.skip:
        print("Ray Serve: skipped")
        return
    try:
        import ray
        from ray import serve
    except ImportError as error:
        print(f"Ray Serve: skipped ({error}; pip install 'ray[serve]')")
        return

    if args.data_dir:
        os.environ["TAU2_DATA_DIR"] = args.data_dir
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    port = free_port()
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        deployment = serve.deployment(serve.ingress(build_tau_app)(), name="tau")
        serve.run(deployment.bind(), name="tau", route_prefix="/")
        wait_until_up(f"http://127.0.0.1:{port}", health_wait("Ray Serve"))
        print(f"Ray Serve started in {time.perf_counter() - started:.1f} s")
        create_episode(f"http://127.0.0.1:{port}")
        me = os.getpid()

        def ray_processes() -> list[int]:
            return [p for p in tree([me]) if p != me]

        processes = ray_processes()
        cpu0 = sum(cpu_seconds(p) for p in processes)
        time.sleep(args.idle)
        idle_rate = (sum(cpu_seconds(p) for p in processes) - cpu0) / args.idle
        gross_ms, trip = drive(port, args.requests, ray_processes)
        net_ms = gross_ms - idle_rate * trip
        print(
            f"Ray Serve (proxy + one replica running the tau-server app): {net_ms:.3f} ms CPU "
            f"per request net of Ray's idle {idle_rate:.3f} cores ({gross_ms:.3f} ms gross, "
            f"{len(processes)} processes); round trip {trip:.3f} ms; "
            f"load average {os.getloadavg()[0]:.2f}"
        )
    finally:
        serve.shutdown()
        ray.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--idle", type=float, default=10.0, help="seconds to measure Ray idle")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--skip", action="append", default=[], choices=["ray", "haproxy", "store"])
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    request_ms = direct_and_haproxy(args)
    store_cost(args, request_ms)
    ray_serve(args)


if __name__ == "__main__":
    main()
