"""`tau-server serve --workers N`: every request of an episode reaches the worker that holds it,
a killed worker's episodes fail with one sentence while the others go on, the worker is
replaced, the limits hold in total, and /health reports every worker."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from tau_mcp.harness.scaffold.pack import write_pack
from tau_mcp.servers import routing
from tau_mcp.servers.domains.discovery import PATH_ENV
from tau_mcp.servers.workers import parse_workers, per_worker_capacity
from tests.support.data import DEMO_DIR
from tests.support.server import free_port, mcp_initialize, real_server

pytestmark = pytest.mark.e2e

MODERN = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def call(client: httpx.Client, path: str, name: str, arguments: dict) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": META},
    }
    headers = {**MODERN, "mcp-method": "tools/call", "mcp-name": name}
    return client.post(path, json=body, headers=headers)


def listing(client: httpx.Client, path: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": META}}
    return client.post(path, json=body, headers={**MODERN, "mcp-method": "tools/list"})


def health(base: str) -> dict:
    return httpx.get(base + "/health", timeout=10).json()


def test_worker_count_option() -> None:
    assert parse_workers("3") == 3
    assert parse_workers("auto") >= 1
    for bad in ("0", "-1", "many"):
        with pytest.raises(ValueError, match="--workers must be a positive number or 'auto'"):
            parse_workers(bad)
    assert per_worker_capacity(20_000, 3) == 6_667
    ids = [routing.id_maker(1, 3)() for _ in range(20)]
    assert {routing.owner(i, 3) for i in ids} == {1}


def test_routing_rule() -> None:
    key = routing.request_key
    assert key("GET", "/mock/episodes/e1/state", None) == ("e1", None)
    assert key("POST", "/mock/episodes/e1/agent/mcp/", "t") == ("e1", None)
    assert key("POST", "/mock/episodes", None) == (None, routing.CREATE)
    assert key("POST", "/mock/agent/mcp", None) == ("default", None)
    assert key("POST", "/mock/mcp", None) == ("default", routing.EP_INITIALIZE)
    assert key("POST", "/mock/mcp/", "s1") == ("s1", None)
    assert key("GET", "/mock/control/status", "s1") == ("s1", None)
    assert key("GET", "/health", None) == (None, None)
    assert routing.body_key(routing.CREATE, b'{"episode_id": "x"}') == "x"
    assert routing.body_key(routing.CREATE, b"{}") is None
    assert routing.body_key(routing.CREATE, b"[" * 100_000) is None
    initialize = json.dumps(mcp_initialize(_extra={"session_id": "s9"})).encode()
    assert routing.body_key(routing.EP_INITIALIZE, initialize) == "s9"
    assert routing.body_key(routing.EP_INITIALIZE, b'{"method": "tools/list"}') == "default"


def test_every_request_of_an_episode_reaches_its_worker_and_a_dead_worker_is_replaced() -> None:
    with (
        real_server("mock", "--workers", "2", data_dir=DEMO_DIR) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        named = [f"ep-{i}" for i in range(24)]
        owners: dict[str, int] = {}
        for episode in named:
            created = client.post("/mock/episodes", json={"episode_id": episode})
            assert created.status_code == 201
            owners[episode] = int(created.headers["tau-worker"])
            assert owners[episode] == routing.owner(episode, 2)
        for _ in range(8):  # ids the server draws land on the worker that drew them
            created = client.post("/mock/episodes")
            episode = created.json()["episode_id"]
            assert created.headers["location"] == f"/mock/episodes/{episode}"
            owners[episode] = int(created.headers["tau-worker"])
            assert owners[episode] == routing.owner(episode, 2)
        assert set(owners.values()) == {0, 1}
        for episode in ("chunky-1", "chunky-2", "chunky-3"):  # a chunked body is read too
            parts = iter([b'{"episode_id": ', f'"{episode}"'.encode(), b"}"])
            headers = {"content-type": "application/json"}
            created = client.post("/mock/episodes", content=parts, headers=headers)
            assert created.status_code == 201
            assert created.headers["tau-worker"] == str(routing.owner(episode, 2))
            owners[episode] = int(created.headers["tau-worker"])

        for episode, worker in owners.items():
            path = f"/mock/episodes/{episode}"
            answers = [
                call(client, f"{path}/agent/mcp", "create_task", {"user_id": "chidi", "title": episode}),
                client.get(f"{path}/state"),
                client.get(f"{path}/hash"),
                listing(client, f"{path}/user/mcp/"),
            ]  # fmt: skip
            assert [a.status_code for a in answers] == [200] * 4, answers[0].text
            assert {int(a.headers["tau-worker"]) for a in answers} == {worker}
            assert (
                "isError" not in answers[0].json()["result"]
                or not answers[0].json()["result"]["isError"]
            )
            titles = [t["title"] for t in answers[1].json()["agent_db"]["tasks"].values()]
            assert episode in titles  # the call's write is in the state the same worker holds

        report = health(base)
        assert report["status"] == "ok" and report["domains"] == ["mock"]
        assert [w["index"] for w in report["workers"]] == [0, 1]
        per_worker = [sum(1 for w in owners.values() if w == i) for i in (0, 1)]
        assert [w["episodes"] for w in report["workers"]] == per_worker
        assert report["episodes"] == len(owners)

        # Kill worker 1: its episodes answer one sentence, worker 0's go on untouched.
        victim = report["workers"][1]["pid"]
        os.kill(victim, signal.SIGKILL)
        time.sleep(0.5)
        for episode, worker in owners.items():
            state = client.get(f"/mock/episodes/{episode}/state")
            if worker == 0:
                assert state.status_code == 200
                assert (
                    call(client, f"/mock/episodes/{episode}/agent/mcp", "get_users", {}).status_code
                    == 200
                )
            else:
                assert state.status_code == 404
                error = state.json()["error"]
                assert f"episode '{episode}' was lost" in error and f"pid {victim}" in error
                mcp = call(client, f"/mock/episodes/{episode}/agent/mcp", "get_users", {})
                assert mcp.status_code == 404 and "was lost" in mcp.json()["error"]
        deadline = time.monotonic() + 30
        while True:
            report = health(base)
            if report["status"] == "ok" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert report["status"] == "ok"
        replaced = report["workers"][1]
        assert replaced["pid"] != victim and replaced["restarts"] == 1
        assert report["workers"][0]["restarts"] == 0
        # The replacement serves new episodes, a lost id included.
        lost = next(e for e, w in owners.items() if w == 1)
        again = client.post("/mock/episodes", json={"episode_id": lost})
        assert again.status_code == 201 and again.headers["tau-worker"] == "1"
        assert client.get(f"/mock/episodes/{lost}/state").status_code == 200


def test_eval_protocol_sessions_stay_on_their_worker() -> None:
    with (
        real_server("mock", "--workers", "2", data_dir=DEMO_DIR) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        for session in ("ep-a", "ep-b", "ep-c", "ep-d"):
            worker = str(routing.owner(session, 2))
            extra = {"session_id": session, "config": {"task_id": None}}
            opened = client.post(
                "/mock/mcp/",
                json=mcp_initialize("ep", _extra=extra),
                headers={"accept": "application/json, text/event-stream"},
            )
            assert opened.status_code == 200 and opened.headers["tau-worker"] == worker
            transport = opened.headers["mcp-session-id"]
            headers = {
                "accept": "application/json, text/event-stream",
                "mcp-session-id": transport,
                "mcp-protocol-version": opened.json()["result"]["protocolVersion"],
            }
            note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (
                client.post("/mock/mcp/", json=note, headers=headers).headers["tau-worker"]
                == worker
            )
            body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "create_task", "arguments": {"user_id": "chidi", "title": session}}}  # fmt: skip
            done = client.post("/mock/mcp/", json=body, headers=headers)
            assert done.status_code == 200 and done.headers["tau-worker"] == worker
            status = client.get("/mock/control/status", headers={"mcp-session-id": session})
            assert status.headers["tau-worker"] == worker and status.json()["step_count"] == 1
            state = client.get(f"/mock/episodes/{session}/state").json()
            assert session in [t["title"] for t in state["agent_db"]["tasks"].values()]


def test_workers_serve_a_domain_path_pack(tmp_path) -> None:
    """The workers are forked after the supervisor found and loaded the pack: both serve it."""
    name = f"workerpack{os.getpid()}"
    write_pack(name, tmp_path / name)
    env = {k: v for k, v in os.environ.items() if k != PATH_ENV}
    with (
        real_server(
            name,
            "--workers",
            "2",
            "--domain-path",
            str(tmp_path / name),
            env=env,
            data_dir=DEMO_DIR,
        ) as base,
        httpx.Client(base_url=base, timeout=10) as client,
    ):
        workers = set()
        for episode in ("pack-a", "pack-b", "pack-c", "pack-d"):
            created = client.post(f"/{name}/episodes", json={"episode_id": episode})
            assert created.status_code == 201, created.text
            workers.add(created.headers["tau-worker"])
            tools = listing(client, f"/{name}/episodes/{episode}/agent/mcp")
            assert tools.status_code == 200 and tools.json()["result"]["tools"]
            assert tools.headers["tau-worker"] == created.headers["tau-worker"]
        assert workers == {"0", "1"}
        assert [w["status"] for w in health(base)["workers"]] == ["ok", "ok"]


def test_capacity_holds_in_total_and_guards_hold_behind_the_front() -> None:
    extra = ["--workers", "2", "--capacity", "4", "--token", "tok", "--max-body", "2000"]
    auth = {"authorization": "Bearer tok"}
    with (
        real_server("mock", *extra, data_dir=DEMO_DIR) as base,
        httpx.Client(base_url=base, timeout=10, headers=auth) as client,
    ):
        # --capacity 4 over two workers: two each; a third on a worker evicts its oldest.
        mine = [e for e in (f"c{i}" for i in range(40)) if routing.owner(e, 2) == 0][:3]
        for episode in mine:
            assert client.post("/mock/episodes", json={"episode_id": episode}).status_code == 201
        assert client.get(f"/mock/episodes/{mine[0]}/state").status_code == 404
        assert client.get(f"/mock/episodes/{mine[2]}/state").status_code == 200
        # The guard stack answers through the front as from one process.
        assert httpx.get(base + "/health").status_code == 401
        assert httpx.post(base + "/mock/episodes", json={}).status_code == 401
        assert client.get("/health", headers={"host": "evil.example"}).status_code == 421
        assert (
            client.post(
                "/mock/episodes", json={}, headers={"origin": "http://evil.example"}
            ).status_code
            == 403
        )
        assert (
            client.post(
                "/mock/episodes", content=b"{}", headers={"content-type": "text/plain"}
            ).status_code
            == 415
        )
        big = json.dumps({"episode_id": "x" * 3000})
        assert (
            client.post(
                "/mock/episodes", content=big, headers={"content-type": "application/json"}
            ).status_code
            == 413
        )
        deep = b'{"episode_id": "d", "x": ' + b"[" * 100 + b"]" * 100 + b"}"
        assert (
            client.post(
                "/mock/episodes", content=deep, headers={"content-type": "application/json"}
            ).status_code
            == 400
        )
        lone = b'{"episode_id": "s\\ud800"}'
        assert (
            client.post(
                "/mock/episodes", content=lone, headers={"content-type": "application/json"}
            ).status_code
            == 400
        )
        bad_id = client.post("/mock/episodes", json={"episode_id": "../x"})
        assert bad_id.status_code == 400 and "episode_id must be" in bad_id.json()["error"]
        assert client.get("/mock/episodes/nope/state").status_code == 404


def test_sigterm_stops_the_front_and_every_worker() -> None:
    port = free_port()
    command = [sys.executable, "-c", "from tau_mcp.servers.cli import app; app()", "serve"]
    command += ["--port", str(port), "--domains", "mock", "--data-dir", str(DEMO_DIR)]
    proc = subprocess.Popen([*command, "--workers", "2"], stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                report = httpx.get(base + "/health", timeout=1).json()
                break
            except (httpx.HTTPError, ValueError):
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.2)
        pids = [w["pid"] for w in report["workers"]]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert "tau-server: stopped by SIGTERM" in proc.stderr.read()
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
            pass
    finally:
        if proc.poll() is None:
            proc.kill()
