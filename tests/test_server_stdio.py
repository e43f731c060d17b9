"""`tau-server stdio` spoken to with raw JSON-RPC over a subprocess's pipes, and `config claude`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tau_mcp.servers.cli import app
from tests.support.data import DEMO_DIR
from tests.support.server import mcp_initialize

pytestmark = pytest.mark.e2e


def _exchange(proc: subprocess.Popen, message: dict) -> dict | None:
    proc.stdin.write(json.dumps(message) + "\n")
    proc.stdin.flush()
    if "id" not in message:
        return None
    line = proc.stdout.readline()
    return json.loads(line)  # every stdout line must be JSON-RPC


def test_raw_json_rpc_over_stdio() -> None:
    command = [
        sys.executable,
        "-c",
        "from tau_mcp.servers.cli import app; app()",
        "stdio",
        "--domain",
        "mock",
        "--side",
        "user",
        "--task-id",
        "demo_notice",
        "--data-dir",
        str(DEMO_DIR),
    ]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        init = _exchange(proc, mcp_initialize("raw"))
        assert init["result"]["serverInfo"]["name"] == "tau2-mock-user"
        _exchange(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        listed = _exchange(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        assert {t["name"] for t in listed["result"]["tools"]} == {
            "check_notifications",
            "dismiss_notification",
        }
        called = _exchange(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {
                    "name": "dismiss_notification",
                    "arguments": {"notification_id": "nope"},
                },
            },
        )
        assert called["result"]["isError"] is True
        assert called["result"]["content"][0]["text"] == "Error: Notification nope not found"
        inbox = _exchange(
            proc,
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "check_notifications", "arguments": {}},
            },
        )
        assert inbox["result"].get("isError", False) is False
        json.loads(inbox["result"]["content"][0]["text"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)
    assert proc.stdout.read() == ""  # nothing but responses ever reached stdout


def test_stdio_bad_domain_is_one_sentence() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tau_mcp.servers.cli import app; app()",
            "stdio",
            "--domain",
            "nope",
            "--data-dir",
            str(DEMO_DIR),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and result.stdout == ""
    assert (
        result.stderr.strip().startswith("error: unknown domain 'nope'")
        and "Traceback" not in result.stderr
    )


def test_config_claude_snippets() -> None:
    runner = CliRunner()
    http = runner.invoke(
        app,
        [
            "config",
            "claude",
            "--domain",
            "airline",
            "--http",
            "http://127.0.0.1:8000",
            "--token",
            "T",
        ],
    )
    assert http.exit_code == 0
    snippet = json.loads(http.stdout.split("\n# Claude Code:")[0])
    assert snippet == {
        "mcpServers": {
            "tau2-airline-agent": {
                "type": "http",
                "url": "http://127.0.0.1:8000/airline/agent/mcp",
                "headers": {"Authorization": "Bearer T"},
            }
        }
    }
    assert (
        "claude mcp add --transport http --header 'Authorization: Bearer T' tau2-airline-agent"
        in http.stdout
    )

    local = runner.invoke(
        app,
        [
            "config",
            "claude",
            "--domain",
            "telecom",
            "--side",
            "user",
            "--data-dir",
            str(DEMO_DIR),
            "--json-only",
        ],
    )
    entry = json.loads(local.stdout)["mcpServers"]["tau2-telecom-user"]
    assert (
        entry["args"][:5] == ["stdio", "--domain", "telecom", "--side", "user"]
        and str(DEMO_DIR.resolve()) in entry["args"]
    )


def test_serve_with_corrupt_data_fails_in_one_sentence(tmp_path) -> None:
    import shutil

    from typer.testing import CliRunner

    from tau_mcp.servers.cli import app as cli_app

    folder = tmp_path / "data"
    shutil.copytree(DEMO_DIR, folder)
    (folder / "tau2/domains/mock/db.json").write_text("{broken")
    result = CliRunner().invoke(cli_app, ["serve", "--data-dir", str(folder), "--port", "1"])
    assert result.exit_code != 0
    assert "corrupt data file" in result.output and "db.json" in result.output
    assert "Traceback" not in result.output
