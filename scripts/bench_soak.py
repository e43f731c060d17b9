"""Soak benchmark: create/call/delete cycles against `tau-server serve` (or, with `--serve`,
`tau-harness serve`) on loopback, printing the server's resident memory (RSS, from /proc) after
every 1,000 cycles.

One cycle: `POST /{domain}/episodes` (from a task), one MCP tool call on the episode's agent
endpoint, `DELETE` the episode. `--protocol legacy` opens an MCP session per episode with the
`initialize` handshake (and closes it with DELETE unless `--no-close`), as older clients and
Eval Protocol do; `--ep` drives the Eval Protocol path (`/{domain}/mcp` + reset_session).
`--serve` cycles simulations of `tau-harness serve` instead (scripted user, no judge):
`POST /simulations`, one tool call as the agent's move on its MCP endpoint, `POST .../end`
(graded). serve keeps an ended simulation readable for a while (its eviction policy,
docs/serve.md), so its RSS grows until the oldest ended ones are forgotten, then levels.

    python scripts/bench_soak.py [--cycles 10000] [--domain airline] [--protocol modern|legacy]
                                 [--ep] [--no-close] [--read-state] [--concurrency 8] [--serve]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import time

import httpx2
from serving import Wait, start_tau_server, stop

CALL = {
    "mock": ("get_users", {}),
    "airline": ("get_user_details", {"user_id": "mia_li_3668"}),
    "retail": ("get_user_details", {"user_id": "yusuf_rossi_9620"}),
    "telecom": ("get_customer_by_phone", {"phone_number": "555-123-2002"}),
}
JSON = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
MODERN = {**JSON, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench-soak", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_server(domain: str, serve: bool = False) -> tuple[str, subprocess.Popen]:
    if serve:
        args = ["--domain", domain, "--user", "scripted", "--judge-llm", "none"]
    else:
        args = ["--domains", domain]
    return start_tau_server(args, Wait(failure="server did not start within 120 s"), harness=serve)


def rpc(method: str, params: dict, ident: int | None = 1) -> str:
    message: dict = {"jsonrpc": "2.0", "method": method, "params": params}
    if ident is not None:
        message["id"] = ident
    return json.dumps(message)


INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench-soak", "version": "0"},
}


async def legacy_session(client: httpx2.AsyncClient, path: str, init: dict) -> dict:
    response = await client.post(path, content=rpc("initialize", init), headers=JSON)
    response.raise_for_status()
    headers = {**JSON, "mcp-session-id": response.headers["mcp-session-id"]}
    headers["mcp-protocol-version"] = response.json()["result"]["protocolVersion"]
    note = rpc("notifications/initialized", {}, None)
    (await client.post(path, content=note, headers=headers)).raise_for_status()
    return headers


async def cycle(client: httpx2.AsyncClient, opts: argparse.Namespace, task: str, n: int) -> None:
    name, args = CALL[opts.domain]
    domain = opts.domain
    if opts.serve:
        created = await client.post("/simulations", json={"task_id": task, "trial": n % 10_000})
        created.raise_for_status()
        simulation = created.json()
        params = {"name": name, "arguments": args, "_meta": META}
        response = await client.post(
            simulation["mcp"],
            content=rpc("tools/call", params),
            headers={**MODERN, "mcp-name": name},
        )
        response.raise_for_status()
        ended = await client.post(f"/simulations/{simulation['simulation_id']}/end")
        ended.raise_for_status()
        return
    if opts.ep:
        extra = {"session_id": f"soak-{n}", "config": {"domain": domain, "task_id": task}}
        init = {**INIT, "clientInfo": {**INIT["clientInfo"], "_extra": extra}}
        path = f"/{domain}/mcp"
        headers = await legacy_session(client, path, init)
        call = rpc("tools/call", {"name": name, "arguments": args})
        (await client.post(path, content=call, headers=headers)).raise_for_status()
        control = {"mcp-session-id": f"soak-{n}"}
        await client.post(f"/{domain}/control/reset_session", headers=control)
        if not opts.no_close:
            await client.delete(path, headers=headers)
        (await client.delete(f"/{domain}/episodes/soak-{n}")).raise_for_status()
        return
    created = await client.post(f"/{domain}/episodes", json={"task_id": task})
    created.raise_for_status()
    ref = created.json()
    path = ref["agent_mcp"]
    if opts.protocol == "modern":
        params = {"name": name, "arguments": args, "_meta": META}
        response = await client.post(
            path, content=rpc("tools/call", params), headers={**MODERN, "mcp-name": name}
        )
        response.raise_for_status()
    else:
        headers = await legacy_session(client, path, INIT)
        call = rpc("tools/call", {"name": name, "arguments": args})
        (await client.post(path, content=call, headers=headers)).raise_for_status()
        if not opts.no_close:
            await client.delete(path, headers=headers)
    episode = f"/{domain}/episodes/{ref['episode_id']}"
    if opts.read_state:  # what grading reads
        (await client.get(f"{episode}/hash")).raise_for_status()
        (await client.get(f"{episode}/state")).raise_for_status()
    (await client.delete(episode)).raise_for_status()


async def soak(base: str, pid: int, opts: argparse.Namespace) -> None:
    async with httpx2.AsyncClient(base_url=base, timeout=60) as client:
        listing = "/tasks" if opts.serve else f"/{opts.domain}/tasks"
        tasks = [t["id"] for t in (await client.get(listing)).json()["tasks"]]
        print(f"cycles       RSS MB   cycles/s   (start: {rss_mb(pid):.1f} MB)")
        done = 0
        started = time.perf_counter()
        while done < opts.cycles:
            batch = min(1000, opts.cycles - done)
            queue = iter(range(done, done + batch))

            async def worker(queue=queue) -> None:
                for n in queue:
                    await cycle(client, opts, tasks[n % len(tasks)], n)

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(opts.concurrency)))
            done += batch
            rate = batch / (time.perf_counter() - t0)
            print(f"{done:>6}   {rss_mb(pid):>10.1f}   {rate:>8.0f}", flush=True)
        print(f"total {time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=10_000)
    parser.add_argument("--domain", default="airline", choices=sorted(CALL))
    parser.add_argument("--protocol", choices=("modern", "legacy"), default="modern")
    parser.add_argument("--ep", action="store_true", help="use the Eval Protocol path")
    parser.add_argument("--no-close", action="store_true", help="legacy/EP: never DELETE")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--read-state", action="store_true", help="GET /hash and /state too")
    parser.add_argument("--url", default=None, help="a running server (needs --pid)")
    parser.add_argument("--pid", type=int, default=None)
    parser.add_argument(
        "--serve", action="store_true", help="cycle `tau-harness serve` simulations"
    )
    opts = parser.parse_args()
    path = "tau-harness serve simulations" if opts.serve else None
    print(
        f"soak: {opts.domain}, {path or ('EP path' if opts.ep else opts.protocol)}"
        f"{', sessions never closed' if opts.no_close else ''}"
        f"{', reading hash+state' if opts.read_state else ''}, concurrency {opts.concurrency}"
    )
    proc = None
    if opts.url:
        base, pid = opts.url.rstrip("/"), opts.pid or os.getpid()
    else:
        base, proc = start_server(opts.domain, opts.serve)
        pid = proc.pid
    try:
        asyncio.run(soak(base, pid, opts))
    finally:
        if proc is not None:
            stop(proc, timeout=10)


if __name__ == "__main__":
    main()
