"""Issue 10, server items 0, 6 and 10, against a real `tau-server serve` process: keep-alive that
outlives clients' pools, request deadlines, the connection cap, one-sentence startup errors,
and our version everywhere."""

from __future__ import annotations

import socket
import subprocess
import sys
from importlib.metadata import version

import pytest

from tests.support.connections import assert_connection_policy
from tests.support.data import DEMO_DIR
from tests.support.server import real_server, serving

pytestmark = pytest.mark.e2e

SERVE = [sys.executable, "-c", "from tau_mcp.servers.cli import app; app()"]


# --- item 10 -----------------------------------------------------------------------------------
def test_version_flag_and_startup_errors_are_one_sentence() -> None:
    out = subprocess.run([*SERVE, "--version"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"tau-server {version('tau-mcp')}"

    bad = subprocess.run(
        [*SERVE, "serve", "--port", "99999"], capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 1  # cannot listen: 1, as from tau-harness serve (issue 31)
    assert bad.stderr.strip() == "error: --port must be between 0 and 65535, not 99999"

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            [*SERVE, "serve", "--port", str(port), "--domains", "mock"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert busy.returncode == 1
    assert busy.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: it is already in use"


async def test_server_info_version_is_ours() -> None:
    async with serving(["mock"], DEMO_DIR) as srv:
        for path in ["/mock/agent/mcp", "/mock/user/mcp", "/mock/mcp"]:
            async with srv.mcp(path, mode="legacy") as client:
                info = client.initialize_result.server_info
                assert info.version == version("tau-mcp"), (path, info)


# --- items 0 and 6 -----------------------------------------------------------------------------
@pytest.mark.parametrize("workers", ["1", "2"])  # one process; the front and two workers
def test_keep_alive_outlives_client_pools_and_slow_clients_are_cut_off(workers: str) -> None:
    extra = ["--header-timeout", "1", "--body-timeout", "1", "--max-connections", "6"]
    extra += ["--workers", workers]
    with real_server("mock", *extra, data_dir=DEMO_DIR) as base:
        assert_connection_policy(base, "/mock/episodes", connections=6)
