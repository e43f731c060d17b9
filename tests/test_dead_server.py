"""Issue 22, item 9: a run whose tau-server dies gives up on it within a bound (seconds), with
one sentence and the resume hint, and leaves a results file that resumes.

No timing is asserted (the machine is shared): the bound is `DEAD_SERVER_S`, and
`scripts/bench_dead_server.py` measures the time from the kill to the run's exit. What is
asserted is the behaviour: the run stops with `ServerGone` (not after every simulation spent its
retries), a server that comes back in time is used again, a URL that never answered fails at
once as before, and the stopped run resumes once a server is back.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tau_mcp.harness.backends import InfrastructureError
from tau_mcp.harness.backends import exchange as exchange_mod
from tau_mcp.harness.backends.exchange import HttpExchange
from tau_mcp.harness.errors import ServerGone
from tau_mcp.harness.results import load_results
from tests.support.data import DEMO_DIR, ROOT
from tests.support.server import free_port

pytestmark = pytest.mark.e2e
DATA_DIR = DEMO_DIR  # the bundled demo set: no reference data needed
SLOW = "tests.test_harness_resume:SlowOracle"  # the oracle, 0.15 s a turn


def _start_server(port: int) -> subprocess.Popen:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tau_mcp.servers.cli import app; app()",
            "serve",
            "--port",
            str(port),
            "--domains",
            "mock",
            "--data-dir",
            str(DATA_DIR),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, "tau-server exited at start"
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx2.HTTPError:
            pass
        assert time.monotonic() < deadline, "tau-server did not start within 60 s"
        time.sleep(0.1)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _run(port: int, save_to: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tau_mcp.harness",
            "run",
            "--domain",
            "mock",
            "--agent",
            SLOW,
            "--user",
            "scripted",
            "--max-concurrency",
            "2",
            "--judge-llm",
            "none",
            "--server",
            f"http://127.0.0.1:{port}",
            "--save-to",
            str(save_to),
            "--data-dir",
            str(DATA_DIR),
        ],
        cwd=ROOT,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finished(save_to: Path) -> int:
    try:
        return len(load_results(save_to)["simulations"])
    except Exception:  # noqa: BLE001 - not written yet
        return 0


def test_killed_server_stops_the_run_with_one_sentence_and_it_resumes(tmp_path: Path) -> None:
    port = free_port()
    save_to = tmp_path / "run.json"
    server = _start_server(port)
    run = _run(port, save_to)
    try:
        deadline = time.monotonic() + 120
        while _finished(save_to) < 2:
            assert run.poll() is None, run.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no simulation finished within 120 s"
            time.sleep(0.05)
        _kill(server)
        # Generous: a run that spent every simulation's retries took minutes; the bound is 10 s.
        out, err = run.communicate(timeout=180)
    finally:
        _kill(server)
        if run.poll() is None:
            run.kill()
            run.communicate()
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert run.returncode == 1, err[-2000:]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[-2000:]
    assert "stopped accepting connections (connection refused)" in lines[0]
    assert "so the run stopped" in lines[0]
    assert "rerun the same command (same --save-to) to run only the rest" in lines[0]
    assert "Traceback" not in out + err
    kept = load_results(save_to)["simulations"]
    assert kept and all(s["termination_reason"] != "infrastructure_error" for s in kept)
    json.loads(save_to.read_text())  # the file itself is whole

    server = _start_server(port)
    try:
        again = _run(port, save_to)
        out, err = again.communicate(timeout=300)
    finally:
        _kill(server)
    assert again.returncode == 0, err[-2000:]
    final = json.loads(save_to.read_text())["simulations"]
    by_id = {s["id"]: s for s in final}
    assert all(by_id[s["id"]] == s for s in kept)  # what was kept is kept as it was
    assert len({(s["task_id"], s["trial"]) for s in final}) == len(final) > len(kept)


async def _exchange(port: int) -> HttpExchange:
    return HttpExchange(f"http://127.0.0.1:{port}", {}, set())


async def test_a_server_back_within_the_bound_is_used_again(monkeypatch) -> None:
    port = free_port()
    server = _start_server(port)
    exchange = await _exchange(port)
    try:
        assert (await exchange.send("GET", "/health")).status == 200
        _kill(server)
        restarted: list[subprocess.Popen] = []
        loop = asyncio.get_running_loop()
        restart = loop.run_in_executor(None, lambda: restarted.append(_start_server(port)))
        monkeypatch.setattr(exchange_mod, "DEAD_SERVER_S", 120.0)  # room for a slow start
        # Several requests meet the dead server; they wait on one probe and then all go through.
        replies = await asyncio.gather(*(exchange.send("GET", "/health") for _ in range(3)))
        assert [r.status for r in replies] == [200, 200, 200]
        await restart
    finally:
        await exchange.aclose()
        _kill(server)
        for proc in restarted:
            _kill(proc)


async def test_a_dead_server_fails_every_waiting_request_with_server_gone(monkeypatch) -> None:
    port = free_port()
    server = _start_server(port)
    exchange = await _exchange(port)
    try:
        assert (await exchange.send("GET", "/health")).status == 200
        _kill(server)
        monkeypatch.setattr(exchange_mod, "DEAD_SERVER_S", 1.0)
        results = await asyncio.gather(
            *(exchange.send("POST", "/mock/episodes", b"{}") for _ in range(3)),
            return_exceptions=True,
        )
        assert all(isinstance(r, ServerGone) for r in results), results
        assert "stopped accepting connections (connection refused)" in str(results[0])
    finally:
        await exchange.aclose()
        _kill(server)


async def test_a_url_that_never_answered_fails_at_once_as_before() -> None:
    exchange = await _exchange(free_port())
    try:
        with pytest.raises(InfrastructureError) as caught:
            await exchange.send("GET", "/health")
        assert not isinstance(caught.value, ServerGone)
    finally:
        await exchange.aclose()
