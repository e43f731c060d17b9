"""On a fresh machine (no data folder, no key, no network) the oracle runs on the bundled demo."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.servers.engine.data import DEMO_DIR


@pytest.mark.skipif(
    not (DEMO_DIR / "tau2").is_dir(), reason=f"bundled demo data missing ({DEMO_DIR})"
)
def test_oracle_on_the_bundled_demo_data(tmp_path, monkeypatch):
    monkeypatch.delenv("TAU2_DATA_DIR", raising=False)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    out = tmp_path / "demo.json"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--domain",
            "mock",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--save-to",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    sims = json.loads(out.read_text())["simulations"]
    assert sims and all(s["reward_info"]["db_check"]["db_match"] for s in sims)
    assert all(s["termination_reason"] == "agent_stop" for s in sims)
