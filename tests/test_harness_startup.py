"""Start-up stays cheap: a run loads only what it uses, when it uses it.

litellm takes seconds to import, FastMCP and the MCP SDK another second or so: a run whose agent
and user call no model, driven in-process, needs none of them (its MCP client and the server's
short path speak the protocol without them). Nor does a run need the other commands' modules
(`tau-harness` imports only the command it runs), the leaderboard, numpy or jsonschema; the
reviewer and the diagnosis load when a review or a failure first asks for them. These are
module-set checks, not timings.

`tau-harness` ends without tearing the interpreter down (`tau_mcp.harness.cli.exit_now`): exit handlers
still run, the exit status is sys.exit's, and a thread still running is waited for.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("litellm", "openai", "fastmcp", "mcp", "httpx2", "uvicorn")

# Which modules are loaded when the first simulation starts and when the program has ended
# (printed by an exit handler, which `tau-harness` runs as it exits).
PROBE = """
import atexit, json, sys
import tau_mcp.harness.simulate as simulate_module
seen = {}
original = simulate_module.SimulationRunner.simulate
def simulate(self, *args, **kwargs):
    seen.setdefault("first", sorted(sys.modules))
    return original(self, *args, **kwargs)
simulate_module.SimulationRunner.simulate = simulate
def report():
    seen["end"] = sorted(sys.modules)
    print("PROBE", json.dumps(seen), flush=True)
atexit.register(report)
from tau_mcp.harness.cli import main
sys.argv = ["tau-harness", *json.loads(sys.argv[1])]
main()
"""

# Not needed by a run of the mock demo before its first simulation, nor at all.
NOT_BEFORE_FIRST_SIMULATION = (
    "tau_mcp.grading.review",
    "tau_mcp.grading.diagnosis",
    "tau_mcp.grading.db_diff",
    "tau_mcp.harness.report",
)
NOT_AT_ALL = (
    "tau_mcp.harness.leaderboard",
    "tau_mcp.harness.cli.convert",
    "tau_mcp.harness.cli.submit",
    "tau_mcp.harness.cli.evaluate",
    "tau_mcp.harness.cli.serve",
    "tau_mcp.harness.cli.review",
    "tau_mcp.harness.cli.data",
    "tau_mcp.harness.serve",
    "numpy",
    "jsonschema",
    *HEAVY,
)


def _probe_mock_run(tmp_path: Path) -> dict:
    args = ["run", "--domain", "mock", "--agent", "oracle", "--user", "scripted"]
    args += ["--judge-llm", "none", "--data-dir", str(REPO / "data" / "demo")]
    args += ["--save-to", str(tmp_path / "r.json")]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    line = next((x for x in out.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, out.stdout + out.stderr
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["simulations"] and all(
        s["reward_info"]["reward"] == 1.0 for s in results["simulations"]
    )
    return json.loads(line.removeprefix("PROBE "))


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """The names (packages or modules) of which something is loaded."""
    return sorted(
        name for name in names if any(m == name or m.startswith(name + ".") for m in modules)
    )


def test_a_mock_run_loads_only_what_it_uses(tmp_path):
    probe = _probe_mock_run(tmp_path)
    assert "first" in probe, "no simulation started"
    early = _loaded(probe["first"], NOT_BEFORE_FIRST_SIMULATION + NOT_AT_ALL)
    assert early == [], f"loaded before the first simulation: {early}"
    late = _loaded(probe["end"], NOT_AT_ALL)
    assert late == [], f"loaded by the run: {late}"
    # the program's own command did load (the probe sees real module sets)
    assert "tau_mcp.harness.cli.run" in probe["first"] and "tau_mcp.harness.report" in probe["end"]


EXIT_PROBE = """
import atexit, sys, threading, time
from tau_mcp.harness.cli import exit_now
atexit.register(lambda: print("handler ran", file=sys.stderr, flush=True))
sys.stdout.write("unflushed line")  # buffered: the exit must flush it
mode = sys.argv[1]
if mode == "thread":
    def late():
        time.sleep(0.3)
        print(" late thread done", flush=True)
    threading.Thread(target=late).start()
    exit_now(3)
elif mode == "message":
    exit_now("stopped: bad input")
else:
    exit_now(None)
"""


@pytest.mark.parametrize(
    ("mode", "status", "stdout", "stderr"),
    [
        ("none", 0, "unflushed line", "handler ran\n"),
        ("message", 1, "unflushed line", "stopped: bad input\nhandler ran\n"),
        ("thread", 3, "unflushed line late thread done\n", "handler ran\n"),
    ],
)
def test_exit_now_keeps_what_sys_exit_does(mode, status, stdout, stderr):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # stdout buffered
    out = subprocess.run(
        [sys.executable, "-c", EXIT_PROBE, mode],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert (out.returncode, out.stdout, out.stderr) == (status, stdout, stderr)


def test_the_program_exits_with_the_commands_status(tmp_path):
    code = "from tau_mcp.harness.cli import main; main()"
    ok = subprocess.run(
        [sys.executable, "-c", code, "--version"], capture_output=True, text=True, timeout=60
    )
    assert ok.returncode == 0 and ok.stdout.startswith("tau-harness"), ok.stdout + ok.stderr
    bad = subprocess.run(
        [sys.executable, "-c", code, "run", "--domain", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert bad.returncode == 1 and bad.stderr.startswith("error: unknown domain 'nope'"), (
        bad.stdout + bad.stderr
    )
