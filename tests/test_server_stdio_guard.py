"""Issue 10, items 4-5 on stdio: every unreadable line is answered with a JSON-RPC error (with
the request's id when it can be read) instead of being dropped, and the server goes on."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading

import pytest

from tau_mcp.servers.stdio_guard import check_line
from tests.support.data import DEMO_DIR
from tests.support.server import mcp_initialize

pytestmark = pytest.mark.e2e

INIT = mcp_initialize("probe")
BAD_LINES = [
    ("[" * 100_000 + "]" * 100_000, None, -32700),
    (
        '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get_users",'
        '"arguments":{"n":' + "9" * 5000 + "}}}",
        5,
        -32600,
    ),
    ('{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}', None, -32600),
    ('{"jsonrpc":"2.0","id":7,"method":"tools/list","params":3}', 7, -32600),
    ("not json", None, -32700),
]


def test_check_line_rules() -> None:
    for line, ident, code in BAD_LINES:
        error = check_line(line)
        assert error is not None and error.id == ident and error.error.code == code, line[:60]
    assert check_line(json.dumps(INIT)) is None
    assert check_line(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})) is None


def test_stdio_answers_every_bad_line_and_keeps_serving() -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tau_mcp.servers.cli import app; app()",
            "stdio",
            "--domain",
            "mock",
            "--data-dir",
            str(DEMO_DIR),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    answers: queue.Queue[dict] = queue.Queue()
    threading.Thread(
        target=lambda: [answers.put(json.loads(line)) for line in proc.stdout], daemon=True
    ).start()
    try:
        call = {
            "jsonrpc": "2.0",
            "id": 9,
            "method": "tools/call",
            "params": {"name": "get_users", "arguments": {}},
        }
        lines = [
            json.dumps(INIT),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ]
        lines += [line for line, _, _ in BAD_LINES] + [json.dumps(call)]
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        got = [answers.get(timeout=60) for _ in range(len(BAD_LINES) + 2)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert got[0]["id"] == 1 and "result" in got[0]
    errors = got[1:-1]
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(i, c) for _, i, c in BAD_LINES]
    assert got[-1]["id"] == 9 and got[-1]["result"]["isError"] is False
