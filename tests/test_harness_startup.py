"""Start-up stays cheap: a run loads neither litellm nor the MCP server stack until it needs them.

litellm takes seconds to import, FastMCP and the MCP SDK another second or so: a run whose agent
and user call no model, driven in-process, needs none of them (its MCP client and the server's
short path speak the protocol without them).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("litellm", "openai", "fastmcp", "mcp", "httpx2", "uvicorn")

PROBE = """
import json, sys
from harness.cli import main
heavy = set(json.loads(sys.argv[2]))
sys.argv = ["tau-harness", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit as exit:
    code = exit.code
else:
    code = 0
loaded = sorted({name.split(".")[0] for name in sys.modules} & heavy)
print("PROBE", json.dumps({"code": code, "loaded": loaded}))
"""


def test_an_in_process_run_without_models_loads_no_model_or_mcp_server_stack(tmp_path):
    args = ["run", "--domain", "mock", "--agent", "oracle", "--user", "scripted"]
    args += ["--judge-llm", "none", "--data-dir", str(REPO / "data" / "demo")]
    args += ["--save-to", str(tmp_path / "r.json")]
    out = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    line = next((x for x in out.stdout.splitlines() if x.startswith("PROBE ")), None)
    assert line is not None, out.stdout + out.stderr
    probe = json.loads(line.removeprefix("PROBE "))
    assert probe["code"] in (0, None), out.stdout + out.stderr
    assert probe["loaded"] == [], f"start-up loaded {probe['loaded']}"
    results = json.loads((tmp_path / "r.json").read_text())
    assert results["simulations"] and all(
        s["reward_info"]["reward"] == 1.0 for s in results["simulations"]
    )
