"""Issue 31 item 11: `tau-server serve` stopped by SIGTERM or SIGINT removes its knowledge-base
files (the writable copies agents wrote in included) and exits 0, as a service manager expects.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import pytest

from tau_mcp.servers.knowledge.sandbox import sandbox_problem
from tests.support.data import DATA_DIR
from tests.support.server import free_port
from tests.support.signals import interruptible

pytestmark = pytest.mark.e2e

SERVE = [sys.executable, "-c", "from tau_mcp.servers.cli import app; app()", "serve"]
MCP_HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28",
    "mcp-method": "tools/call",
    "mcp-name": "shell",
}
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _shell(base: str, path: str, command: str) -> str:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "shell", "arguments": {"command": command}, "_meta": META},
    }
    reply = httpx.post(base + path, json=body, headers=MCP_HEADERS, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["result"]["content"][0]["text"]


@pytest.fixture
def open_tmp():
    # A temp folder the sandbox's user can reach even when we run as root (see kb_files.py).
    folder = Path(tempfile.mkdtemp(prefix="tau-mcp-signal-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.needs_data("banking_knowledge")
@pytest.mark.skipif(sandbox_problem() is not None, reason=f"no shell sandbox: {sandbox_problem()}")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_server_removes_its_knowledge_base_files_and_exits_0(open_tmp, signum):
    port = free_port()
    proc = subprocess.Popen(
        [
            *SERVE,
            "--port",
            str(port),
            "--domains",
            "banking_knowledge",
            "--data-dir",
            str(DATA_DIR),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(open_tmp)},
        preexec_fn=interruptible(),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "tau-server did not start"
            time.sleep(0.2)
        created = httpx.post(
            base + "/banking_knowledge/episodes",
            json={"task_id": "task_001", "retrieval_config": "terminal_use_write"},
            timeout=60,
        )
        assert created.status_code == 201, created.text
        agent = created.json()["agent_mcp"]
        assert _shell(base, agent, "echo mine > notes.md && cat notes.md") == "mine\n"
        written = list(open_tmp.glob("tau-mcp-kb-*/scratch-*/knowledge_base/notes.md"))
        assert len(written) == 1
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert sorted(p.name for p in open_tmp.iterdir()) == []
    assert f"stopped by {signal.Signals(signum).name}" in err.decode()
    assert "Traceback" not in err.decode()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stopped_stdio_server_exits_0(signum):
    from tests.support.data import DEMO_DIR

    stdio = [*SERVE[:-1], "stdio", "--domain", "mock", "--data-dir", str(DEMO_DIR)]
    proc = subprocess.Popen(
        stdio,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=interruptible(),
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        hello = (
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
        )
        proc.stdin.write(hello)
        proc.stdin.flush()
        assert b'"result"' in proc.stdout.readline()  # serving
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err.decode()[-2000:]
    assert "Traceback" not in err.decode()
