"""`tau-harness run --workers N`: local worker processes give the results one process gives,
every simulation exactly once in one results file, and nothing lost or left running when a
worker or the driver is killed or interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.metrics import INFRA
from tau_mcp.harness.results import journal_path, load_results
from tau_mcp.harness.results.lock import lock_path
from tests.support.data import DATA_DIR, DEMO_DIR, ROOT
from tests.support.fake_llm_server import FakeLLMServer, call, text
from tests.support.harness import load

pytestmark = pytest.mark.e2e
SLOW = "tests.test_harness_resume:SlowOracle"  # the oracle, 0.15 s a turn
AGENT, USER = "agent-model", "user-model"


def _command(save_to: Path, *extra: str, domain: str = "mock", agent: str = "oracle") -> list[str]:
    return [
        sys.executable,
        "-m",
        "tau_mcp.harness",
        "run",
        "--domain",
        domain,
        "--agent",
        agent,
        "--user",
        "scripted",
        "--judge-llm",
        "none",
        "--save-to",
        str(save_to),
        "--data-dir",
        str(DEMO_DIR if domain == "mock" else DATA_DIR),
        *extra,
    ]


def _env() -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _run(command: list[str], timeout: float = 180) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def _start(command: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        command, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _by_key(sims: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    keyed: dict[tuple[str, int], dict[str, Any]] = {}
    for sim in sims:
        key = (str(sim["task_id"]), int(sim["trial"]))
        assert key not in keyed, f"{key} recorded twice"
        keyed[key] = sim
    return keyed


def _comparable(sim: dict[str, Any]) -> dict[str, Any]:
    """What must not depend on where a simulation ran (ids, times and durations may)."""
    return {
        "seed": sim["seed"],
        "termination_reason": sim["termination_reason"],
        "reward_info": sim["reward_info"],
        "messages": [
            (
                m["role"],
                m.get("content"),
                m.get("requestor"),
                [(c["name"], c["arguments"]) for c in m.get("tool_calls") or []],
            )
            for m in sim["messages"]
        ],
    }


def _finished_cleanly(save_to: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The results file of a finished run: whole, journal folded in, lock released."""
    document = json.loads(save_to.read_text())
    assert not journal_path(save_to).exists()
    assert not lock_path(save_to).exists()
    return _by_key(document["simulations"])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _running(pid: int) -> bool:
    """Alive and not a zombie (a zombie has ended; only its exit status waits for a reaper)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _worker_pids(driver: int) -> list[int]:
    """The driver's worker processes: the children of its one child, the spawner."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        spawners = _children(driver)
        workers = [w for s in spawners for w in _children(s)]
        if spawners and workers:
            return workers
        time.sleep(0.05)
    raise AssertionError("the driver started no worker processes")


def _all_gone(pids: list[int], within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not any(_running(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


def _wait_for_saved(save_to: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if save_to.exists() and len(load_results(save_to)["simulations"]) >= count:
            return
        time.sleep(0.05)
    raise AssertionError(f"no {count} simulations saved while the run went on")


# --- the same results ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "domain", ["mock", pytest.param("airline", marks=pytest.mark.needs_data("airline"))]
)
def test_workers_give_the_results_one_process_gives(tmp_path, domain):
    trials = "3" if domain == "mock" else "1"
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    extra = ("--num-trials", trials, "--max-concurrency", "8")
    _run(_command(one, *extra, domain=domain))
    _run(_command(two, *extra, "--workers", "2", domain=domain))
    alone, shared = _finished_cleanly(one), _finished_cleanly(two)
    data = DEMO_DIR if domain == "mock" else DATA_DIR
    assert len(alone) == int(trials) * len(load(domain, data).task_ids("base"))
    assert alone.keys() == shared.keys()
    for key, sim in alone.items():
        assert _comparable(shared[key]) == _comparable(sim), key
    assert all(s["termination_reason"] != INFRA for s in shared.values())


def _user_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The user model: asks once, then ends once the agent has answered (the agent's texts
    reach it as role "user", the greeting first)."""
    heard = [m for m in body["messages"] if m["role"] == "user"]
    if len(heard) >= 2:
        return text(f"Thanks, that is all ({len(heard)}). ###STOP###")
    return text("Please create a task 'Book flights to Lagos' for chidi.")


def _agent_reply(body: dict[str, Any]) -> dict[str, Any]:
    """The agent model: one tool call, then a text quoting the tool's answer."""
    results = [m for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return call("create_task", user_id="chidi", title="Book flights to Lagos")  # demo_create
    return text(f"Done: {str(results[-1]['content'])[:60]}")


def test_llm_agent_and_user_over_workers_match_one_process(tmp_path):
    with FakeLLMServer() as fake:
        fake.respond(AGENT, _agent_reply)
        fake.respond(USER, _user_reply)
        args = json.dumps(fake.llm_args())
        models = ["--agent-llm", f"openai/{AGENT}", "--agent-llm-args", args]
        models += ["--user-llm", f"openai/{USER}", "--user-llm-args", args]
        extra = ("--num-trials", "2", "--max-concurrency", "6", "--max-retries", "0", *models)

        def command(save_to: Path, *more: str) -> list[str]:
            cmd = _command(save_to, *extra, *more, agent="llm")
            cmd[cmd.index("--user") + 1] = "llm"
            return cmd

        one, two = tmp_path / "one.json", tmp_path / "two.json"
        _run(command(one))
        requests_alone = sum(len(r) for r in fake.requests.values())
        _run(command(two, "--workers", "2"))
        requests_total = sum(len(r) for r in fake.requests.values())
    alone, shared = _finished_cleanly(one), _finished_cleanly(two)
    assert len(alone) == 2 * len(load("mock", DEMO_DIR).task_ids("base"))
    assert alone.keys() == shared.keys()
    assert requests_total == 2 * requests_alone  # no request lost or repeated
    for key, sim in alone.items():
        assert _comparable(shared[key]) == _comparable(sim), key
    assert all(s["termination_reason"] == "user_stop" for s in shared.values())
    assert any(s["reward_info"]["reward"] == 1.0 for s in shared.values())


def test_provider_limit_holds_over_all_workers(tmp_path):
    with FakeLLMServer() as fake:
        fake.respond(AGENT, _agent_reply)
        fake.delay = 0.05
        args = json.dumps(fake.llm_args())
        base = _command(tmp_path / "limited.json", agent="llm")
        base += ["--agent-llm", f"openai/{AGENT}", "--agent-llm-args", args, "--workers", "2"]
        base += ["--max-concurrency", "6", "--max-retries", "0", "--num-tasks", "5"]
        _run([*base, "--provider-limit", "openai=1"])
        assert fake.peak_in_flight == 1
        unlimited = [*base, "--save-to", str(tmp_path / "unlimited.json")]
        _run(unlimited)
        assert fake.peak_in_flight > 1  # the check above can fail


def test_workers_talk_to_a_running_server(tmp_path):
    from tests.support.server import real_server

    one, two = tmp_path / "one.json", tmp_path / "two.json"
    with real_server("mock", data_dir=DEMO_DIR) as url:
        _run(_command(two, "--workers", "2", "--server", url))
    _run(_command(one))
    alone, shared = _finished_cleanly(one), _finished_cleanly(two)
    assert alone.keys() == shared.keys()
    for key, sim in alone.items():
        assert _comparable(shared[key]) == _comparable(sim), key


# --- killed and interrupted ---------------------------------------------------------------------
def test_a_killed_worker_costs_only_a_retry(tmp_path):
    save_to = tmp_path / "r.json"
    proc = _start(_command(save_to, "--agent", SLOW, "--workers", "2", "--num-trials", "6"))
    try:
        workers = _worker_pids(proc.pid)
        _wait_for_saved(save_to, 4, proc)
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-2000:]
    sims = _finished_cleanly(save_to)
    assert len(sims) == 30
    assert all(s["termination_reason"] != INFRA for s in sims.values())
    assert all(s["reward_info"]["db_check"]["db_match"] for s in sims.values())
    # the worker was killed mid-simulation: what it ran went again elsewhere
    assert any(s["info"].get("worker_retries") for s in sims.values())


def test_a_killed_driver_leaves_no_worker_and_resumes(tmp_path):
    save_to = tmp_path / "r.json"
    command = _command(save_to, "--agent", SLOW, "--workers", "2", "--num-trials", "6")
    proc = _start(command)
    try:
        workers = _worker_pids(proc.pid)
        spawner = _children(proc.pid)
        _wait_for_saved(save_to, 4, proc)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _all_gone(workers + spawner), "worker processes outlived their driver"
    kept = {s["id"]: s for s in load_results(save_to)["simulations"]}
    assert 4 <= len(kept) < 30
    _run(command)
    final = _finished_cleanly(save_to)
    assert len(final) == 30
    by_id = {s["id"]: s for s in final.values()}
    for sim_id, sim in kept.items():
        assert by_id[sim_id] == sim  # finished simulations are kept as they were


def test_ctrl_c_stops_the_workers_and_leaves_a_resumable_file(tmp_path):
    save_to = tmp_path / "r.json"
    proc = _start(_command(save_to, "--agent", SLOW, "--workers", "2", "--num-trials", "6"))
    try:
        workers = _worker_pids(proc.pid) + _children(proc.pid)
        _wait_for_saved(save_to, 2, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("interrupted: ") and "rerun the same command" in last
    assert not lock_path(save_to).exists()
    assert _all_gone(workers)
    assert 2 <= len(load_results(save_to)["simulations"]) < 30


# --- refused and failed up front -----------------------------------------------------------------
cli = CliRunner()


def _one_sentence(result) -> str:
    text_ = result.output.strip()
    assert result.exit_code == 1, text_
    assert "Traceback" not in text_ and text_.count("\n") == 0 and text_.startswith("error:"), text_
    return text_


def test_refused_combinations_are_one_sentence(tmp_path):
    save_to = tmp_path / "r.json"
    base = _command(save_to)[3:]
    cmd_agent = [*base, "--workers", "2", "--agent", "cmd", "--agent-cmd", "true"]
    assert "--workers cannot run --agent cmd" in _one_sentence(cli.invoke(app, cmd_agent))
    bad = cli.invoke(app, [*base, "--workers", "many"])
    assert "--workers takes a number of processes or auto" in _one_sentence(bad)
    assert not save_to.exists()


def test_a_missing_key_with_workers_is_one_sentence_and_no_file(tmp_path, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_API_BASE", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    save_to = tmp_path / "r.json"
    args = [*_command(save_to, "--workers", "2", agent="llm")[3:], "--agent-llm", "gpt-4.1"]
    assert "needs OPENAI_API_KEY" in _one_sentence(cli.invoke(app, args))
    assert not save_to.exists() and not journal_path(save_to).exists()


def test_an_unreachable_server_with_workers_is_one_sentence_and_no_file(tmp_path):
    from tests.support.server import free_port

    save_to = tmp_path / "r.json"
    url = f"http://127.0.0.1:{free_port()}"
    done = subprocess.run(
        _command(save_to, "--workers", "2", "--server", url),
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().startswith("error: cannot reach tau-server"), done.stderr
    assert done.stderr.strip().count("\n") == 0
    assert not save_to.exists()
