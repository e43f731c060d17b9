"""Issue 31 item 10: secrets on the command line are visible to every local user in `ps`.

`--token`, `--server-token` and an `api_key` inside `--agent-llm-args` / `--user-llm-args` /
`--judge-llm-args` can now come from a file (`--token-file`, `--server-token-file`, `@FILE` for
the JSON) or the environment; given on the command line they still work, with one warning line
on stderr that says how to keep them out of `ps`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import httpx2
import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.servers.cli import app as server_app
from tests.support.data import DEMO_DIR
from tests.support.server import free_port, real_server

cli = CliRunner()
TOKEN = "tok-PLANTED-0123456789abcdef"
KEY = "sk-PLANTED-0123456789abcdef"


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def _oracle_run(tmp_path, *extra: str, env: dict | None = None):
    return cli.invoke(
        app,
        [
            "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted",
            "--judge-llm", "none", "--data-dir", str(DEMO_DIR), "--task-ids", "demo_create",
            "--save-to", str(tmp_path / "r.json"), *extra,
        ],
        env={"COLUMNS": "200", **(env or {})},
    )  # fmt: skip


def test_a_key_in_llm_args_on_the_command_line_is_warned_about(tmp_path):
    inline = _oracle_run(tmp_path, "--agent-llm-args", json.dumps({"api_key": KEY, "seed": 1}))
    assert inline.exit_code == 0, inline.stdout + inline.stderr
    [warning] = _warnings(inline.stderr)
    assert "--agent-llm-args" in warning and "api_key" in warning and "ps" in warning
    assert "@FILE" in warning and KEY not in warning
    # from a file: read, no warning, the key redacted in the results as ever
    args = tmp_path / "agent-args.json"
    args.write_text(json.dumps({"api_key": KEY, "seed": 1}))
    (tmp_path / "r.json").unlink()
    from_file = _oracle_run(tmp_path, "--agent-llm-args", f"@{args}")
    assert from_file.exit_code == 0, from_file.stdout + from_file.stderr
    assert _warnings(from_file.stderr) == []
    recorded = json.loads((tmp_path / "r.json").read_text())["info"]["agent_info"]["llm_args"]
    assert recorded == {"api_key": "[redacted]", "seed": 1}
    # nothing secret inline (a local server's placeholder key, a reference): no warning
    (tmp_path / "r.json").unlink()
    harmless = _oracle_run(
        tmp_path, "--agent-llm-args", '{"api_key": "none", "api_base": "http://x"}',
        "--judge-llm-args", '{"api_key": "os.environ/MY_JUDGE_KEY"}',
    )  # fmt: skip
    assert harmless.exit_code == 0 and _warnings(harmless.stderr) == []
    missing = _oracle_run(tmp_path, "--user-llm-args", f"@{tmp_path / 'nowhere.json'}")
    assert missing.exit_code == 1
    assert missing.stderr.startswith("error: cannot read --user-llm-args from")


def test_a_server_token_on_the_command_line_is_warned_about(tmp_path):
    nowhere = f"http://127.0.0.1:{free_port()}"
    inline = _oracle_run(tmp_path, "--server", nowhere, "--server-token", TOKEN)
    assert inline.exit_code == 1
    [warning] = _warnings(inline.stderr)
    assert warning.startswith("warning: --server-token on the command line is visible")
    assert "$TAU_SERVER_TOKEN" in warning and "--server-token-file" in warning
    assert TOKEN not in inline.stderr + inline.stdout
    env = _oracle_run(tmp_path, "--server", nowhere, env={"TAU_SERVER_TOKEN": TOKEN})
    assert env.exit_code == 1 and _warnings(env.stderr) == []
    both = tmp_path / "token"
    both.write_text(TOKEN + "\n")
    twice = _oracle_run(
        tmp_path, "--server", nowhere, "--server-token", TOKEN, "--server-token-file", str(both)
    )
    assert twice.exit_code == 1
    assert "either --server-token or --server-token-file" in twice.stderr


@pytest.mark.e2e
def test_token_files_guard_both_servers_and_reach_them(tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    with real_server("mock", "--token-file", str(token_file), data_dir=DEMO_DIR) as url:
        assert httpx2.get(url + "/health").status_code == 401
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx2.get(url + "/health", headers=headers).status_code == 200
        done = _oracle_run(tmp_path, "--server", url, "--server-token-file", str(token_file))
        assert done.exit_code == 0, done.stdout + done.stderr
        assert _warnings(done.stderr) == []
    port = free_port()
    serve = subprocess.Popen(
        [sys.executable, "-m", "tau_mcp.harness", "serve", "--domain", "mock", "--user",
         "scripted", "--judge-llm", "none", "--data-dir", str(DEMO_DIR), "--port", str(port),
         "--token-file", str(token_file)],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            assert serve.poll() is None, serve.communicate()[1]
            try:
                status = httpx2.get(base + "/health", timeout=1).status_code
                break
            except httpx2.HTTPError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert status == 401
        headers = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx2.get(base + "/health", headers=headers).status_code == 200
    finally:
        serve.terminate()
        _, err = serve.communicate(timeout=30)
    assert _warnings(err) == []


@pytest.mark.parametrize("program", ["tau-server", "tau-harness"])
def test_a_serve_token_on_the_command_line_is_warned_about(program):
    command = (
        (server_app, ["serve", "--domains", "mock", "--data-dir", str(DEMO_DIR)])
        if program == "tau-server"
        else (app, ["serve", "--domain", "mock", "--user", "scripted", "--judge-llm", "none"])
    )
    # an impossible port: the command stops right after reading its options
    done = cli.invoke(command[0], [*command[1], "--port", "70000", "--token", TOKEN])
    assert done.exit_code == 1
    [warning] = _warnings(done.stderr)
    assert warning.startswith("warning: --token on the command line is visible")
    assert "--token-file" in warning and TOKEN not in done.stderr + done.stdout
    unreadable = cli.invoke(command[0], [*command[1], "--token-file", "/nonexistent/token"])
    assert unreadable.exit_code == (2 if program == "tau-server" else 1)  # each one's usage code
    assert unreadable.stderr.startswith("error: cannot read --token-file /nonexistent/token")
