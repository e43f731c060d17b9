"""Issue 22, item 4: keys on disk.

Keys are planted through every route one can enter by (model arguments of the agent, the user
and the judge: `api_key`, an `extra_headers` value, an `Authorization` header, a litellm
`os.environ/NAME` argument; the environment; `--server-token`; serve's `--token`; the token an
`--agent cmd` program gets), and made to come back out (a provider error that echoes the key, a
program that prints its environment). Then every file the commands wrote (results, journals,
`evaluate`'s output, `report` in every format, serve's `--save-to`), every byte they printed,
and serve's HTTP and MCP answers are searched for every planted value.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from tau_mcp.harness import redaction
from tau_mcp.harness.results import ResultsFile, load_results
from tests.support.data import DATA_DIR, ROOT
from tests.support.fake_llm_server import FakeLLMServer, echo_key, text
from tests.support.server import free_port, real_server
from tests.support.signals import interruptible

pytestmark = [pytest.mark.needs_data("mock"), pytest.mark.e2e]

PLANTED = {
    "agent api_key": "sk-agent-PLANTED-0001aaaa",
    "agent extra header": "hdr-PLANTED-0002bbbb",
    "agent authorization header": "bearer-PLANTED-0003cccc",
    "user key via os.environ/": "sk-user-PLANTED-0004dddd",
    "judge api_key": "sk-judge-PLANTED-0005eeee",
    "environment OPENAI_API_KEY": "sk-env-PLANTED-0006ffff",
    "server token": "srv-PLANTED-0007gggg",
    "serve token": "serve-PLANTED-0008hhhh",
    "serve user api_key": "sk-serveuser-PLANTED-0009iiii",
}
MARK = "PLANTED"  # in every planted value: any leak, whole or in part, shows it


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "OPENAI_API_KEY": PLANTED["environment OPENAI_API_KEY"],
        "TAU_TEST_USER_KEY": PLANTED["user key via os.environ/"],
    }


def _harness(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tau_mcp.harness", *args],
        cwd=ROOT,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


class Outputs:
    """Everything the commands printed, to search with the files."""

    def __init__(self) -> None:
        self.printed: list[tuple[str, str]] = []

    def keep(self, what: str, done: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
        self.printed.append((f"{what} stdout", done.stdout))
        self.printed.append((f"{what} stderr", done.stderr))
        return done


def _leaks(where: str, text: str) -> list[str]:
    found = [f"{where}: {name}" for name, value in PLANTED.items() if value in text]
    if MARK in text and not found:
        found.append(f"{where}: part of a planted value")
    return found


def _search_files(folder: Path, skip: set[Path] = frozenset()) -> list[str]:
    leaks = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path not in skip:
            leaks += _leaks(str(path.relative_to(folder)), path.read_text(errors="replace"))
    return leaks


def _agent_args(fake: FakeLLMServer) -> str:
    return json.dumps(
        {
            "api_base": fake.api_base,
            "api_key": PLANTED["agent api_key"],
            "num_retries": 0,
            "temperature": 0.0,
            "extra_headers": {
                "X-Planted": PLANTED["agent extra header"],
                "Authorization": f"Bearer {PLANTED['agent authorization header']}",
            },
        }
    )


def _user_args(fake: FakeLLMServer) -> str:
    return json.dumps(
        {"api_base": fake.api_base, "api_key": "os.environ/TAU_TEST_USER_KEY", "num_retries": 0}
    )


def _judge_args(fake: FakeLLMServer) -> str:
    return json.dumps(
        {"api_base": fake.api_base, "api_key": PLANTED["judge api_key"], "num_retries": 0}
    )


def _run_args(
    fake: FakeLLMServer, save_to: Path, tasks: str, *extra: str, domain: str = "mock"
) -> list[str]:
    return [
        "run",
        "--domain",
        domain,
        "--agent",
        "llm",
        "--agent-llm",
        "openai/agent-model",
        "--agent-llm-args",
        _agent_args(fake),
        "--user",
        "llm",
        "--user-llm",
        "openai/user-model",
        "--user-llm-args",
        _user_args(fake),
        "--judge-llm",
        "openai/judge-model",
        "--judge-llm-args",
        _judge_args(fake),
        "--max-retries",
        "0",
        "--task-ids",
        tasks,
        "--save-to",
        str(save_to),
        "--data-dir",
        str(DATA_DIR),
        *extra,
    ]


def _user_replies(body: dict) -> dict:
    """The simulated user: it fails echoing its key on one task, stops at once on another, and
    on the rest asks the agent something (whose model then fails echoing the agent's key)."""
    system = body["messages"][0]["content"]
    if "delete all your current tasks" in system:
        return echo_key()
    if "mark an existing task as completed" in system:
        return text("Thanks, all good. ###STOP###")
    return text("Please create a task for me.")


@pytest.mark.needs_data("retail")
@pytest.mark.needs_data("retail")
def test_planted_keys_are_in_no_file_and_no_output(fake, tmp_path: Path) -> None:
    out = Outputs()
    fake.respond("user-model", _user_replies)
    fake.respond("agent-model", lambda body: echo_key())
    fake.respond("judge-model", lambda body: echo_key())
    tasks = "create_task_1,update_task_1,impossible_task_1"

    # In-process and with worker processes: provider errors echo the agent's and user's keys.
    # Every model call is recorded to a cassette too (issue 33): searched like every file.
    for name, extra in (("run", ()), ("workers", ("--workers", "2"))):
        save_to = tmp_path / f"{name}.json"
        extra = (*extra, "--record", str(tmp_path / f"{name}-cassette"))
        done = out.keep(name, _harness(*_run_args(fake, save_to, tasks, *extra)))
        assert done.returncode == 1, done.stderr[-3000:]  # infrastructure errors: exit 1
        sims = load_results(save_to)["simulations"]
        errors = " ".join(str((s.get("info") or {}).get("error")) for s in sims)
        assert errors.count("Incorrect API key provided") == 2, errors  # the echoes happened
        assert errors.count(redaction.REDACTED) >= 2, errors
        info = json.loads(save_to.read_text())["info"]
        assert info["agent_info"]["llm_args"]["api_key"] == redaction.REDACTED
        assert info["agent_info"]["llm_args"]["extra_headers"] == {
            "X-Planted": redaction.REDACTED,
            "Authorization": redaction.REDACTED,
        }
        assert info["agent_info"]["llm_args"]["temperature"] == 0.0  # the rest is kept
        assert info["user_info"]["llm_args"]["api_key"] == redaction.REDACTED
        assert info["judge_llm_args"]["api_key"] == redaction.REDACTED
        assert any((tmp_path / f"{name}-cassette" / "lanes").iterdir())  # calls were recorded
    # The same command resumes into its file: redacted headers compare equal.
    again = out.keep("resume", _harness(*_run_args(fake, tmp_path / "run.json", tasks)))
    assert "holds a run with other settings" not in again.stderr, again.stderr[-2000:]

    # The judge echoes its key as the grading of a task with NL assertions (retail) fails.
    fake.respond("user-model", lambda body: text("Bye. ###STOP###"))
    judged = tmp_path / "judged.json"
    judge_tape = ("--record", str(tmp_path / "judge-cassette"))
    out.keep("judge", _harness(*_run_args(fake, judged, "2", *judge_tape, domain="retail")))
    assert "Incorrect API key provided" in json.dumps(load_results(judged))

    # Readers and writers of results: evaluate, view, report in every format.
    first = tmp_path / "run.json"
    out.keep(
        "evaluate",
        _harness(
            "evaluate",
            "--domain",
            "mock",
            "--input",
            str(first),
            "--save-to",
            str(tmp_path / "regraded.json"),
            "--judge-llm",
            "openai/judge-model",
            "--judge-llm-args",
            _judge_args(fake),
            "--data-dir",
            str(DATA_DIR),
        ),
    )
    assert (tmp_path / "regraded.json").is_file()
    for fmt in ("json", "md"):
        report = out.keep(f"report {fmt}", _harness("report", str(first), "--format", fmt))
        assert report.returncode == 0, report.stderr
    html = _harness(
        "report", str(first), str(tmp_path / "workers.json"), "-o", str(tmp_path / "r.html")
    )
    assert out.keep("report html", html).returncode == 0, html.stderr
    for sim in load_results(first)["simulations"]:
        out.keep("view --sim", _harness("view", str(first), "--sim", sim["id"]))
    out.keep("view", _harness("view", str(first), str(judged)))

    leaks = _search_files(tmp_path)
    for what, printed in out.printed:
        leaks += _leaks(what, printed)
    assert not leaks, leaks
    for request in fake.requests["agent-model"]:  # the keys did reach the provider
        assert request["model"] == "agent-model"


def test_an_agent_program_that_prints_its_environment(tmp_path: Path) -> None:
    side = tmp_path / "side"
    side.mkdir()
    # The whole environment, then the two lines checked below: the recorded output keeps only
    # its tail, whose start depends on how large the environment is.
    program = (
        f'env; echo "OPENAI_API_KEY=$OPENAI_API_KEY"; echo "token=$TAU_MCP_TOKEN"; '
        f'echo "$TAU_MCP_TOKEN" > {side}/token'
    )
    save_to = tmp_path / "cmd.json"
    done = _harness(
        "run",
        "--domain",
        "mock",
        "--agent",
        "cmd",
        "--agent-cmd",
        program,
        "--user",
        "scripted",
        "--judge-llm",
        "none",
        "--task-ids",
        "create_task_1",
        "--save-to",
        str(save_to),
        "--data-dir",
        str(DATA_DIR),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    token = (side / "token").read_text().strip()
    tail = load_results(save_to)["simulations"][0]["info"]["agent_command"]["output_tail"]
    assert "OPENAI_API_KEY=" + redaction.REDACTED in tail  # the dump was recorded, redacted
    assert f"token={redaction.REDACTED}" in tail and len(token) > 20
    text_out = save_to.read_text() + done.stdout + done.stderr
    assert token not in text_out
    assert not _search_files(tmp_path, skip={side / "token"}) + _leaks("output", text_out)


def test_a_key_cut_by_the_output_tail_leaves_no_part_behind(tmp_path: Path) -> None:
    """The recorded output is the program's last 2,000 characters. A key that starts before
    that window and ends inside it was recorded in part: redaction, applied after the cut,
    no longer recognised it. The program below puts the cut 10 characters before the end of
    the key, every time."""
    key = "svc-PLANTED-" + "k" * 20 + "0123456789"
    from tau_mcp.harness.serve.command import OUTPUT_TAIL

    program = (
        f'{sys.executable} -c "import os, sys; '
        f"sys.stdout.write('x' * 3000 + os.environ['MY_SERVICE_TOKEN'] + 'y' * {OUTPUT_TAIL - 10})\""
    )
    save_to = tmp_path / "cut.json"
    done = _harness(
        "run", "--domain", "mock", "--agent", "cmd", "--agent-cmd", program,
        "--user", "scripted", "--judge-llm", "none", "--task-ids", "create_task_1",
        "--save-to", str(save_to), "--data-dir", str(DATA_DIR),
        env={**_env(), "MY_SERVICE_TOKEN": key},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    tail = load_results(save_to)["simulations"][0]["info"]["agent_command"]["output_tail"]
    assert tail.endswith("y" * 100) and len(tail) <= OUTPUT_TAIL
    assert "0123456789" not in tail, tail[:80]
    assert not _search_files(tmp_path) + _leaks("output", done.stdout + done.stderr)


def test_server_token_is_in_no_file_and_no_output(tmp_path: Path) -> None:
    token = PLANTED["server token"]
    with real_server("mock", "--token", token) as url:
        save_to = tmp_path / "remote.json"
        done = _harness(
            "run",
            "--domain",
            "mock",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--num-tasks",
            "2",
            "--server",
            url,
            "--save-to",
            str(save_to),
            "--data-dir",
            str(DATA_DIR),
            env={**_env(), "TAU_SERVER_TOKEN": token},
        )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not _search_files(tmp_path) + _leaks("output", done.stdout + done.stderr)


def test_serve_save_to_answers_and_logs_hold_no_key(fake, tmp_path: Path) -> None:
    from tests.test_harness_serve import agent_client

    user_key, token = PLANTED["serve user api_key"], PLANTED["serve token"]
    fake.respond("user-model", lambda body: echo_key())
    port, save_to = free_port(), tmp_path / "served.json"
    args = {"api_base": fake.api_base, "api_key": user_key, "num_retries": 0}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tau_mcp.harness", "serve", "--domain", "mock", "--user", "llm"]
        + ["--user-llm", "openai/user-model", "--user-llm-args", json.dumps(args)]
        + ["--judge-llm", "none", "--port", str(port), "--token", token]
        + ["--save-to", str(save_to), "--data-dir", str(DATA_DIR), "--log-level", "info"],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=interruptible(),
    )
    base, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"}
    answers = []
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.communicate()[1][-2000:]
            try:
                if httpx2.get(base + "/health", headers=headers, timeout=1).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            assert time.monotonic() < deadline, "serve did not start"
            time.sleep(0.1)
        created = httpx2.post(
            base + "/simulations", json={"task_id": "create_task_1"}, headers=headers
        ).json()
        answers.append(json.dumps(created))

        async def play() -> None:
            async with agent_client("fastmcp", base + created["mcp"], token) as (call, *_):
                reply, _ = await call("send_message_to_user", {"message": "Hello!"})
                answers.append(str(reply))

        import asyncio

        asyncio.run(play())
        got = httpx2.get(f"{base}/simulations/{created['simulation_id']}", headers=headers)
        answers.append(got.text)
        assert "Incorrect API key provided" in got.text  # the echo came back, redacted
    finally:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    assert "Incorrect API key provided" in json.dumps(load_results(save_to))  # file + journal
    leaks = _search_files(tmp_path) + _leaks("serve output", stdout + stderr)
    leaks += _leaks("HTTP and MCP answers", "\n".join(answers))
    assert not leaks, leaks


def test_a_results_file_written_with_keys_shows_none(tmp_path: Path) -> None:
    """A file from before redaction (or another tool): readers redact its header's keys by
    name and, by value, wherever else they occur."""
    key = PLANTED["agent api_key"]
    path = tmp_path / "old.json"
    path.write_text(
        json.dumps(
            {
                "info": {"agent_info": {"llm": "m", "llm_args": {"api_key": key}}},
                "tasks": [],
                "simulations": [
                    {
                        "id": "s",
                        "task_id": "create_task_1",
                        "trial": 0,
                        "termination_reason": "infrastructure_error",
                        "info": {"error": f"AuthenticationError: bad key {key}"},
                    }
                ],
            }
        )
    )
    printed = []
    for args in (["view", str(path)], ["view", str(path), "--sim", "s"]):
        printed.append(_harness(*args))
    for fmt in ("json", "md"):
        printed.append(_harness("report", str(path), "--format", fmt))
    printed.append(_harness("report", str(path), "-o", str(tmp_path / "old.html")))
    assert all(p.returncode == 0 for p in printed), [p.stderr for p in printed]
    leaks = _search_files(tmp_path, skip={path})
    for done in printed:
        leaks += _leaks("output", done.stdout + done.stderr)
    assert not leaks, leaks


def test_redaction_rules() -> None:
    assert all(
        redaction.is_secret_name(n)
        for n in ("api_key", "openai_key", "aws_secret_access_key", "access_token", "apiKey")
    )
    assert all(
        redaction.is_secret_name(n) for n in ("Authorization", "x-api-key", "password", "token")
    )
    assert not any(
        redaction.is_secret_name(n)
        for n in ("max_tokens", "max_completion_tokens", "temperature", "top_k", "api_base")
    )
    args = {
        "api_key": "sk-0123456789",
        "max_tokens": 100,
        "extra_headers": {"anthropic-beta": "tools-2024", "Authorization": "Bearer tok-0123456789"},
        "nested": {"client_secret": "shh-0123456789", "n": 1},
    }
    assert redaction.redact_args(args) == {
        "api_key": redaction.REDACTED,
        "max_tokens": 100,
        "extra_headers": {
            "anthropic-beta": redaction.REDACTED,
            "Authorization": redaction.REDACTED,
        },
        "nested": {"client_secret": redaction.REDACTED, "n": 1},
    }
    assert redaction.secret_values(args) == {
        "sk-0123456789",
        "tools-2024",
        "Bearer tok-0123456789",
        "tok-0123456789",
        "shh-0123456789",
    }
    assert redaction.without_secrets(args) == {"max_tokens": 100, "nested": args["nested"]}
    record = {"info": {"error": "401: key sk-0123456789 is wrong"}, "n": 1}
    assert redaction.redact(record, ["sk-0123456789"]) == {
        "info": {"error": f"401: key {redaction.REDACTED} is wrong"},
        "n": 1,
    }
    assert redaction.redact(record, ["absent-secret"]) is record  # nothing found: not copied
    assert redaction.environment_secrets({"HF_TOKEN": "hf_abcdefghijklmn", "HOME": "/root"}) == {
        "hf_abcdefghijklmn"
    }


def test_results_file_redacts_what_it_writes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(redaction, "_remembered", {"sk-remembered-0123"})
    path = tmp_path / "r.json"
    info = {"agent_info": {"llm_args": {"api_key": "sk-remembered-0123", "seed": 3}}}
    results = ResultsFile(path, info, [])
    results.add({"id": "a", "task_id": "t", "info": {"error": "echo sk-remembered-0123"}})
    journal = path.with_name(path.name + ".journal.jsonl").read_text()
    results.finish()
    assert "sk-remembered-0123" not in journal + path.read_text()
    saved = json.loads(path.read_text())
    assert saved["info"]["agent_info"]["llm_args"] == {"api_key": redaction.REDACTED, "seed": 3}
    assert info["agent_info"]["llm_args"]["api_key"] == "sk-remembered-0123"  # caller's intact
