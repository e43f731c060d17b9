"""`tau-server stdio` with every request piped at once and stdin closed: all are answered."""

from __future__ import annotations

import json
import subprocess
import sys

import anyio
import pytest

from tau_mcp.servers.stdio_drain import InFlight
from tests.support.data import DEMO_DIR

pytestmark = pytest.mark.e2e


def test_requests_in_flight_at_end_of_input_are_answered() -> None:
    calls = 60
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "pipe", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ] + [
        {
            "jsonrpc": "2.0",
            "id": i,
            "method": "tools/call",
            "params": {"name": "get_users", "arguments": {}},
        }
        for i in range(1, calls + 1)
    ]
    piped = "".join(json.dumps(m) + "\n" for m in messages)
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tau_mcp.servers.cli import app; app()",
            "stdio",
            "--domain",
            "mock",
        ]
        + ["--data-dir", str(DEMO_DIR)],
        input=piped,  # written whole, then stdin is closed
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert sorted(a["id"] for a in answers) == list(range(calls + 1))
    assert all("ana" in a["result"]["content"][0]["text"] for a in answers if a["id"])


async def test_in_flight_ids_go_idle_only_when_all_are_answered() -> None:
    flight = InFlight()
    await flight.wait_idle()  # nothing read yet
    flight.start(1)
    flight.start("b")
    flight.finish(1)
    with anyio.move_on_after(0.05) as waited:
        await flight.wait_idle()
    assert waited.cancelled_caught  # "b" is still unanswered
    flight.finish("b")
    with anyio.fail_after(1):
        await flight.wait_idle()
