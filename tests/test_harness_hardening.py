"""Issue 10, harness items: each probe that went wrong, sent again.

Two runs on one results file, resuming under changed settings, runs whose simulations fail
for infrastructure reasons, missing API keys, a full disk, malformed files given to `view`,
Ctrl-C during a run, file permissions, and `evaluate` on another domain's file.
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
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.agents import OracleAgent
from tau_mcp.harness.cli import app
from tau_mcp.harness.results import ResultsFile, atomic_write, journal_path, load_results
from tau_mcp.harness.results.lock import ResultsLocked, lock_path, results_lock
from tau_mcp.harness.results.resume import differences
from tests.support.data import DATA_DIR, DEMO_DIR, ROOT
from tests.support.fake_llm_server import FakeLLMServer

cli = CliRunner()
SLOW = "tests.test_harness_resume:SlowOracle"  # the oracle, 0.15 s a turn
GATED = "tests.test_harness_hardening:GatedOracle"


class GatedOracle(OracleAgent):
    """The oracle, held before its first move until the file $TAU_TEST_GATE exists."""

    implementation = "gated-oracle"

    async def respond(self, incoming):
        gate = os.environ.get("TAU_TEST_GATE")
        while gate and not os.path.exists(gate):
            await asyncio.sleep(0.05)
        return await super().respond(incoming)


def _command(
    save_to: Path, *extra: str, agent: str = "oracle", data_dir: Path = DEMO_DIR
) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tau_mcp.harness",
        "run",
        "--domain",
        "mock",
        "--agent",
        agent,
        "--user",
        "scripted",
        "--max-concurrency",
        "1",
        "--judge-llm",
        "none",
        "--save-to",
        str(save_to),
        "--data-dir",
        str(data_dir),
        *extra,
    ]


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra}


def _start(
    save_to: Path, *extra: str, agent: str = SLOW, env: dict[str, str] | None = None
) -> subprocess.Popen:
    return subprocess.Popen(
        _command(save_to, *extra, agent=agent),
        cwd=ROOT,
        env=env or _env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(condition, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if condition():
            return
        time.sleep(0.02)
    raise AssertionError(f"condition not reached (exit {proc.poll()})")


def _one_sentence(text: str) -> str:
    text = text.strip()
    assert "Traceback" not in text and text.count("\n") == 0 and text.startswith("error:"), text
    return text


def _cli_run(save_to: Path, *extra: str):
    return cli.invoke(app, _command(save_to, *extra)[3:])


# --- 11: one writer per results file ------------------------------------------------------


@pytest.mark.e2e
def test_a_second_run_on_the_same_file_is_refused_and_the_first_loses_nothing(tmp_path):
    save_to = tmp_path / "r.json"
    three = "demo_create,demo_complete,demo_notice"
    gate = tmp_path / "go"
    first = _start(save_to, "--task-ids", three, agent=GATED, env=_env(TAU_TEST_GATE=str(gate)))
    try:
        _wait_for(lambda: lock_path(save_to).exists(), first)  # locked, held at the gate
        second = subprocess.run(
            _command(save_to, "--task-ids", "demo_delete"),
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        gate.touch()
        out, err = first.communicate(timeout=120)
    assert second.returncode == 1
    assert "is in use by another run" in _one_sentence(second.stderr)
    assert first.returncode == 0, err[-2000:]
    final = json.loads(save_to.read_text())["simulations"]
    assert sorted(s["task_id"] for s in final) == sorted(three.split(","))
    assert not lock_path(save_to).exists()  # released and removed at the end


def test_the_lock_is_exclusive_and_released(tmp_path):
    path = tmp_path / "r.json"
    with results_lock(path):
        assert lock_path(path).read_text() == str(os.getpid())
        with pytest.raises(ResultsLocked, match="in use by another run"):
            with results_lock(path):
                pass
    with results_lock(path):  # free again
        pass
    assert not lock_path(path).exists()


def test_evaluate_will_not_write_over_a_run_in_progress(tmp_path):
    save_to, _ = tmp_path / "run.json", None
    assert _cli_run(save_to, "--task-ids", "demo_create").exit_code == 0
    target = tmp_path / "unfinished.json"
    target.write_text(save_to.read_text())
    journal_path(target).write_text("")
    result = cli.invoke(
        app,
        ["evaluate", "--domain", "mock", "--input", str(save_to), "--save-to", str(target)]
        + ["--judge-llm", "none", "--data-dir", str(DEMO_DIR)],
    )
    assert result.exit_code == 1 and "unfinished run" in _one_sentence(result.output)
    with results_lock(target):
        result = cli.invoke(
            app,
            ["evaluate", "--domain", "mock", "--input", str(save_to), "--save-to", str(target)]
            + ["--judge-llm", "none", "--data-dir", str(DEMO_DIR)],
        )
    assert result.exit_code == 1 and "in use by another run" in _one_sentence(result.output)


# --- 12: resume only under the same settings; evaluate checks the domain -------------------


def test_resume_refuses_changed_settings_and_names_each(tmp_path):
    save_to = tmp_path / "r.json"
    assert _cli_run(save_to, "--task-ids", "demo_create").exit_code == 0
    before = save_to.read_text()
    result = _cli_run(
        save_to,
        "--task-ids",
        "demo_create",
        "--seed",
        "7",
        "--max-steps",
        "30",
        "--max-errors",
        "3",
    )
    message = _one_sentence(result.output)
    assert result.exit_code == 1
    for part in ("seed 300 (now 7)", "max steps 200 (now 30)", "max errors 10 (now 3)"):
        assert part in message
    result = _cli_run(save_to, "--task-ids", "demo_create,demo_complete")
    assert "tasks (1 in the file, 2 selected now)" in _one_sentence(result.output)
    result = _cli_run(save_to, "--task-ids", "demo_create", "--enforce-communication-protocol")
    assert "communication protocol false (now true)" in _one_sentence(result.output)
    assert save_to.read_text() == before  # a refusal writes nothing
    # Settings that cannot change a recorded result do not stand in the way.
    result = _cli_run(
        save_to, "--task-ids", "demo_create", "--max-concurrency", "4", "--max-retries", "0"
    )
    assert result.exit_code == 0, result.output
    assert len(json.loads(save_to.read_text())["simulations"]) == 1


def test_differences_cover_models_judge_and_data():
    def header(**changes):
        info = {
            "agent_info": {"implementation": "llm", "llm": "a", "llm_args": {"temperature": 0}},
            "user_info": {"implementation": "llm", "llm": "u", "llm_args": None},
            "environment_info": {"domain_name": "mock", "policy": "P"},
            "judge_llm": "j",
            "judge_llm_args": {"temperature": 0.0},
            "seed": 1,
            "num_trials": 1,
        }
        for key, value in changes.items():
            section, _, field = key.partition("__")
            if field:
                info[section] = {**info[section], field: value}
            else:
                info[section] = value
        return {"info": info, "tasks": [{"id": "1", "x": 1}]}

    assert differences(header(), header()) == []
    assert (
        differences(header(), header(agent_info__llm_args={"temperature": 0, "api_key": "other"}))
        == []
    )  # a key only authenticates
    assert differences(header(), header(agent_info__llm_args={"temperature": 1})) == [
        'agent model args {"temperature": 0} (now {"temperature": 1})'
    ]
    assert differences(header(), header(user_info__llm="v", judge_llm="k")) == [
        "user model u (now v)",
        "judge model j (now k)",
    ]
    assert differences(header(), header(environment_info__policy="Q")) == ["domain policy"]
    changed = {**header(), "tasks": [{"id": "1", "x": 2}]}
    assert differences(header(), changed) == ["task definitions (the data differ)"]
    old = header()
    del old["info"]["judge_llm_args"]  # an older file: what it does not record is not compared
    assert differences(old, header(judge_llm_args={"temperature": 1})) == []


def test_evaluate_refuses_a_file_of_another_domain(tmp_path):
    save_to = tmp_path / "r.json"
    assert _cli_run(save_to, "--task-ids", "demo_create").exit_code == 0
    result = cli.invoke(
        app,
        ["evaluate", "--domain", "airline", "--input", str(save_to)]
        + ["--save-to", str(tmp_path / "x.json"), "--judge-llm", "none"],
    )
    assert result.exit_code == 1
    assert "holds simulations of domain 'mock', not 'airline'" in _one_sentence(result.output)
    assert not (tmp_path / "x.json").exists()


# --- 13: infrastructure errors fail the run; missing keys fail at once ----------------------


def test_infrastructure_errors_exit_nonzero_and_show_in_the_bar(tmp_path, monkeypatch):
    with FakeLLMServer() as fake:  # nothing scripted: every model call fails
        args = json.dumps(fake.llm_args())
        save_to = tmp_path / "r.json"
        result = cli.invoke(
            app,
            ["run", "--domain", "mock", "--agent", "llm", "--agent-llm", "openai/agent"]
            + ["--agent-llm-args", args, "--user", "scripted", "--judge-llm", "none"]
            + ["--task-ids", "demo_create,demo_complete", "--max-retries", "0"]
            + ["--data-dir", str(DEMO_DIR), "--save-to", str(save_to)],
        )
    assert result.exit_code == 1, result.output
    assert "2 infrastructure errors" in result.output  # the bar, not "pass 100.0%"
    assert "100.0%" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("error: 2 of 2 simulations ended in an infrastructure error")
    assert "rerun the same command" in last


def test_a_missing_key_is_one_sentence_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    save_to = tmp_path / "r.json"
    started = time.perf_counter()
    result = cli.invoke(
        app,
        ["run", "--domain", "mock", "--agent", "llm", "--agent-llm", "gpt-4.1"]
        + ["--user", "scripted", "--judge-llm", "none", "--data-dir", str(DEMO_DIR)]
        + ["--save-to", str(save_to)],
    )
    assert result.exit_code == 1
    assert "needs OPENAI_API_KEY" in _one_sentence(result.output)
    assert time.perf_counter() - started < 30 and not save_to.exists()


@pytest.mark.needs_data("retail")
def test_the_retail_judge_without_a_key_says_judge_none_up_front(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    base = ["--domain", "retail", "--data-dir", str(DATA_DIR)]
    result = cli.invoke(
        app,
        ["run", *base, "--agent", "oracle", "--user", "scripted"]
        + ["--save-to", str(tmp_path / "r.json")],
    )
    assert result.exit_code == 1
    message = _one_sentence(result.output)
    assert "NL-assertion judge" in message and "--judge-llm none" in message
    assert not (tmp_path / "r.json").exists()


def test_a_local_model_with_api_base_needs_no_key(monkeypatch):
    from tau_mcp.harness.preflight import ModelUse, problem

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    local = {"api_base": "http://127.0.0.1:9/v1"}
    assert problem(ModelUse("agent", "openai/fake", local)) is None
    monkeypatch.setenv("OPENAI_API_BASE", "http://127.0.0.1:9/v1")
    assert problem(ModelUse("agent", "openai/fake", {})) is None
    assert "does not know" in problem(ModelUse("agent", "no-such-model", {}))


# --- 14: full disk, unwritable place, malformed files, Ctrl-C, permissions ----------------


def _limit_file_size(limit: int):
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@pytest.mark.e2e
@pytest.mark.needs_data  # the size limit below is set for the reference mock's results
def test_a_full_disk_is_one_sentence_and_keeps_what_finished(tmp_path):
    save_to = tmp_path / "r.json"
    # Every file this run writes may grow to 22 kB (the header alone is 15): the journal fills up after a few
    # simulations, as a disk would (Python ignores SIGXFSZ, so writes fail with EFBIG).
    full = subprocess.run(
        _command(save_to, "--max-concurrency", "3", data_dir=DATA_DIR),  # others stop cleanly
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size(22_000),
    )
    assert full.returncode == 1
    message = _one_sentence(full.stderr.strip().splitlines()[-1])
    assert "cannot write results to" in message and "rerun with the same --save-to" in message
    assert "Traceback" not in full.stderr + full.stdout
    kept = load_results(save_to)["simulations"]
    assert 1 <= len(kept) < 10
    assert f"the {len(kept)} finished simulation(s)" in message
    rerun = subprocess.run(
        _command(save_to, data_dir=DATA_DIR),
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    final = {s["id"]: s for s in json.loads(save_to.read_text())["simulations"]}
    assert len(final) == 10 and all(s["id"] in final for s in kept)


def test_an_unwritable_save_to_is_one_sentence(tmp_path):
    if os.geteuid() == 0:
        target = Path("/sys/tau-mcp-test/r.json")  # even root cannot create files there
    else:
        locked = tmp_path / "ro"
        locked.mkdir(mode=0o500)
        target = locked / "r.json"
    result = _cli_run(target)
    assert result.exit_code == 1
    assert f"cannot write results to {target}" in _one_sentence(result.output)


def test_a_torn_journal_line_does_not_swallow_the_next_simulation(tmp_path):
    path = tmp_path / "r.json"
    results = ResultsFile(path, {}, [])
    results.save()
    journal_path(path).write_text('{"id": "s0", "task_id": "a"}\n{"id": "torn", "ta')
    ResultsFile(path, {}, []).add({"id": "s1", "task_id": "b"})
    assert sorted(s["id"] for s in load_results(path)["simulations"]) == ["s0", "s1"]


@pytest.mark.parametrize(
    "content, expected",
    [
        ([1, 2], "simulation 0 is not a JSON object"),
        ([{"id": "a", "messages": []}], "simulation 0 (id a): task_id is missing"),
        (
            [{"id": "a", "task_id": "x", "reward_info": {"reward": "high"}}],
            "simulation 0 (id a): reward_info.reward is invalid",
        ),
        (
            {"info": {}, "simulations": [{"task_id": "x", "messages": [{"content": "hi"}]}]},
            "simulation 0: messages.0.role is missing",
        ),
        ({"info": [], "simulations": []}, "malformed header"),
    ],
)
def test_view_on_malformed_files_is_one_sentence(tmp_path, content, expected):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(content))
    for command in (["view", str(path)], ["view", str(path), "--sim", "a"]):
        result = cli.invoke(app, command)
        assert result.exit_code == 1
        assert expected in _one_sentence(result.output)


def test_view_on_a_list_of_simulations_works(tmp_path):
    save_to = tmp_path / "r.json"
    assert _cli_run(save_to, "--task-ids", "demo_create").exit_code == 0
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(json.loads(save_to.read_text())["simulations"]))
    result = cli.invoke(app, ["view", str(listed)])
    assert result.exit_code == 0 and "demo_create" in result.output


@pytest.mark.e2e
def test_ctrl_c_says_how_many_are_saved_and_how_to_resume(tmp_path):
    save_to = tmp_path / "r.json"
    proc = _start(save_to)
    try:
        _wait_for(lambda: save_to.exists() and len(load_results(save_to)["simulations"]) >= 2, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    saved = len(load_results(save_to)["simulations"])
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted: {saved} finished simulation")
    assert "rerun the same command" in last
    assert not lock_path(save_to).exists()


def test_results_files_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        atomic_write(tmp_path / "a.json", "{}")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o640
    save_to = tmp_path / "r.json"
    assert _cli_run(save_to, "--task-ids", "demo_create").exit_code == 0
    assert save_to.stat().st_mode & 0o777 == 0o666 & ~old


def test_version():
    from importlib.metadata import version

    result = cli.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output.strip() == f"tau-harness {version('tau-mcp')}"


def test_evaluate_on_a_message_it_cannot_replay_is_one_sentence(tmp_path):
    bad = tmp_path / "bad.json"
    sim = {"id": "a", "task_id": "demo_create", "termination_reason": "agent_stop"}
    bad.write_text(json.dumps([{**sim, "messages": [{"role": "bogus", "content": "x"}]}]))
    result = cli.invoke(
        app,
        ["evaluate", "--domain", "mock", "--input", str(bad), "--save-to", str(tmp_path / "o")]
        + ["--judge-llm", "none", "--data-dir", str(DEMO_DIR)],
    )
    assert result.exit_code == 1
    assert "simulation a: message 0 cannot be replayed (role:" in _one_sentence(result.output)
    assert not (tmp_path / "o").exists()


async def test_the_first_failure_cancels_the_other_simulations():
    from tau_mcp.harness.task_group import gather_or_cancel

    finished = []

    async def slow(i: int) -> int:
        await asyncio.sleep(0.5)
        finished.append(i)
        return i

    async def broken() -> None:
        await asyncio.sleep(0.01)
        raise OSError("disk full")

    assert await gather_or_cancel(slow(1), slow(2)) == [1, 2]
    finished.clear()
    with pytest.raises(OSError, match="disk full"):  # the error itself, not an exception group
        await gather_or_cancel(slow(1), broken(), slow(2))
    await asyncio.sleep(0.6)
    assert finished == []


def test_a_journal_without_its_results_file_is_not_appended_to(tmp_path):
    save_to = tmp_path / "r.json"
    journal_path(save_to).write_text('{"id": "old", "task_id": "demo_create"}\n')
    result = _cli_run(save_to, "--task-ids", "demo_create")
    assert result.exit_code == 1
    assert "is left over from a run whose results file" in _one_sentence(result.output)
    assert not save_to.exists()
