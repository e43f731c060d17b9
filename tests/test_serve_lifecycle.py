"""Issue 22, items 5 (forgetting) and 6 (losing results) for `tau-harness serve`.

A finished simulation is journaled before it is answered; a results file that cannot be written
is said loudly and stops new simulations; SIGTERM and SIGINT record the open simulations,
write the file and drop the lock; quiet simulations are ended as abandoned, ended ones are
forgotten after a while, and no more than a bounded number are open at once. All on the
bundled demo data.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest

from tau_mcp.harness.backends.http import in_process_backend
from tau_mcp.harness.config import RunConfig
from tau_mcp.harness.results import journal_path, load_results
from tau_mcp.harness.results.lock import lock_path
from tau_mcp.harness.serve.app import create_serve_app
from tau_mcp.harness.serve.simulation import Conflict, SimulationHub, Unavailable, make_hub
from tests.support.data import DEMO_DIR, ROOT
from tests.support.harness import load
from tests.support.server import free_port

TASK = "demo_create"


@asynccontextmanager
async def _hub(save_to: Path | None) -> SimulationHub:
    domain = load("mock", DEMO_DIR)
    backend = await in_process_backend({"mock": domain})
    config = RunConfig(domain="mock", agent="mcp", user="scripted", judge_llm="none")
    hub = make_hub(backend, domain, config, save_to)
    try:
        yield hub
    finally:
        await hub.close()
        await backend.close()


async def _until(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.02)


# --- journaled before answered; a full disk -----------------------------------------------------


async def test_a_finished_simulation_is_journaled_before_it_is_answered(tmp_path: Path) -> None:
    save_to = tmp_path / "s.json"
    async with _hub(save_to) as hub:
        seen = []
        journal = hub._on_finished

        def watching(simulation):
            seen.append((simulation.channel.closed, simulation.finished.is_set()))
            journal(simulation)
            seen.append(simulation.id in {s["id"] for s in load_results(save_to)["simulations"]})

        hub._on_finished = watching
        simulation = hub.create(TASK, 0)
        record = await simulation.end()
        assert seen == [(False, False), True]  # saved while nobody had heard the outcome yet
        assert record.id == simulation.id


def _limit_file_size(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _serve(save_to: Path, port: int, preexec=None) -> subprocess.Popen:
    command = [
        sys.executable,
        "-m",
        "tau_mcp.harness",
        "serve",
        "--domain",
        "mock",
        "--user",
        "scripted",
    ]
    command += ["--judge-llm", "none", "--port", str(port), "--save-to", str(save_to)]
    command += ["--data-dir", str(DEMO_DIR)]
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec,
    )


def _started(proc: subprocess.Popen, base: str) -> None:
    deadline = time.monotonic() + 60
    while True:
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        try:
            if httpx2.get(base + "/health", timeout=1).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        assert time.monotonic() < deadline, "serve did not start"
        time.sleep(0.1)


def _play_one(base: str, trial: int) -> dict:
    created = httpx2.post(base + "/simulations", json={"task_id": TASK, "trial": trial})
    assert created.status_code == 201, created.text
    sim_id = created.json()["simulation_id"]
    return httpx2.post(f"{base}/simulations/{sim_id}/end", timeout=60).json()


@pytest.mark.e2e
def test_a_full_disk_is_said_loudly_and_stops_new_simulations(tmp_path: Path) -> None:
    async def header_size() -> int:
        async with _hub(tmp_path / "probe.json"):
            pass
        return (tmp_path / "probe.json").stat().st_size

    # Room for the header and its first task, then the journal fills up, as a disk would
    # (Python ignores SIGXFSZ, so writes fail with EFBIG).
    limit = asyncio.run(header_size()) + 6_000
    port, save_to = free_port(), tmp_path / "served.json"
    proc = _serve(save_to, port, _limit_file_size(limit))
    base = f"http://127.0.0.1:{port}"
    try:
        _started(proc, base)
        views = []
        for trial in range(40):
            views.append(_play_one(base, trial))
            if "not_saved" in views[-1]["info"]:
                break
        failed = views[-1]
        assert "not_saved" in failed["info"], "the file never filled up"
        assert "cannot write results to" in failed["info"]["not_saved"]
        refused = httpx2.post(base + "/simulations", json={"task_id": TASK, "trial": 99})
        assert refused.status_code == 503
        assert "takes no new simulations" in refused.json()["error"]
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert "takes no new simulations" in err  # said when it happened, not only at the end
    assert "Task exception was never retrieved" not in err and "Traceback" not in err
    assert proc.returncode == 1 and err.strip().splitlines()[-1].startswith("error: cannot write")
    # Every simulation answered as saved is in the file or its journal.
    kept = {s["id"] for s in load_results(save_to)["simulations"]}
    assert {v["id"] for v in views[:-1]} <= kept


# --- SIGTERM and SIGINT -------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_records_open_simulations_and_finishes_the_file(
    tmp_path: Path, stop: signal.Signals
) -> None:
    port, save_to = free_port(), tmp_path / "served.json"
    proc = _serve(save_to, port)
    base = f"http://127.0.0.1:{port}"
    try:
        _started(proc, base)
        ended = _play_one(base, 0)
        opened = httpx2.post(base + "/simulations", json={"task_id": TASK, "trial": 1}).json()
    finally:
        proc.send_signal(stop)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert f"stopped by {stop.name}" in err and f"results saved to {save_to}" in err
    assert not journal_path(save_to).exists() and not lock_path(save_to).exists()
    sims = {s["id"]: s for s in json.loads(save_to.read_text())["simulations"]}
    assert sims[ended["id"]]["termination_reason"] == "agent_stop"
    left_open = sims[opened["simulation_id"]]
    assert left_open["termination_reason"] == "infrastructure_error"  # run again on resume
    assert left_open["info"]["error"] == "the server shut down"


# --- forgetting ---------------------------------------------------------------------------------


async def test_a_quiet_simulation_is_abandoned_then_forgotten(tmp_path: Path) -> None:
    save_to = tmp_path / "s.json"
    async with _hub(save_to) as hub:
        hub.SWEEP_EVERY_S, hub.ABANDON_AFTER_S, hub.KEEP_ENDED_S = 0.05, 0.3, 0.5
        quiet = hub.create(TASK, 0)
        await _until(lambda: quiet.record is not None)
        assert quiet.record.termination_reason == "infrastructure_error"
        assert quiet.record.info["error"].startswith("abandoned: no move from the agent")
        saved = {s["id"]: s for s in load_results(save_to)["simulations"]}
        assert saved[quiet.id]["termination_reason"] == "infrastructure_error"
        await _until(lambda: hub.get(quiet.id) is None)  # forgotten; the file keeps it
        # An abandoned trial is not a result: it may be played again.
        again = hub.create(TASK, 0)
        await again.end()


async def test_at_most_max_ended_are_kept_and_max_open_are_open(tmp_path: Path) -> None:
    async with _hub(None) as hub:
        hub.MAX_ENDED, hub.MAX_OPEN = 1, 2
        first, second = hub.create(TASK, 0), hub.create(TASK, 1)
        with pytest.raises(Unavailable, match="2 simulations are open"):
            hub.create(TASK, 2)
        app = create_serve_app(hub, None)
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            refused = await http.post("/simulations", json={"task_id": TASK, "trial": 2})
        assert refused.status_code == 503 and "open" in refused.json()["error"]
        await first.end()
        await second.end()
        await hub.sweep()
        assert hub.get(first.id) is None and hub.get(second.id) is not None  # the oldest goes
        # Ending frees a place: a third one opens now.
        third = hub.create(TASK, 2)
        await third.end()


async def test_a_trial_in_use_is_refused_while_open_and_once_saved(tmp_path: Path) -> None:
    async with _hub(tmp_path / "r.json") as hub:
        open_one = hub.create(TASK, 0)
        with pytest.raises(Conflict, match="trial 0 is already in"):
            hub.create(TASK, 0)
        await open_one.end()
        with pytest.raises(Conflict, match="trial 0 is already in"):
            hub.create(TASK, 0)
        await hub.create(TASK, 1).end()


def test_trial_seeds_are_drawn_once_per_base_seed(monkeypatch) -> None:
    """A served run asks for trials one at a time, up to 99,999: each seed is drawn once and
    kept, so asking for trial n again (or n - 1) draws nothing, and the values are run's."""
    from tau_mcp.harness import config

    config._seed_stream.cache_clear()
    stream = config._seed_stream(4242)
    draws = 0
    real = stream.draw

    def counted(a: int, b: int) -> int:
        nonlocal draws
        draws += 1
        return real(a, b)

    stream.draw = counted
    assert config.trial_seed(4242, 500) == config.trial_seeds(4242, 501)[500]
    assert draws == 501
    assert [config.trial_seed(4242, n) for n in (500, 3, 499)] == [
        config.trial_seeds(4242, 501)[n] for n in (500, 3, 499)
    ]
    assert draws == 501
