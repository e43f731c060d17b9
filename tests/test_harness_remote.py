"""`tau-harness run --server URL` against a real `tau-server serve` process on loopback."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support.server import DATA_DIR, real_server

pytestmark = [pytest.mark.needs_data("airline"), pytest.mark.e2e]


def _run(*args: str):
    return CliRunner().invoke(
        app,
        [
            "run",
            "--agent",
            "oracle",
            "--user",
            "scripted",
            "--judge-llm",
            "none",
            "--data-dir",
            str(DATA_DIR),
            *args,
        ],
    )


@pytest.mark.parametrize("workers", ["1", "2"])  # one process; the front and two workers
def test_remote_server_run_matches_gold(tmp_path, workers: str) -> None:
    out = tmp_path / "remote.json"
    with real_server("mock,airline", "--token", "s3cret", "--workers", workers) as url:
        result = _run(
            "--domain",
            "airline",
            "--num-tasks",
            "4",
            "--server",
            url,
            "--server-token",
            "s3cret",
            "--save-to",
            str(out),
        )
        assert result.exit_code == 0, result.output
        sims = json.loads(out.read_text())["simulations"]
        assert len(sims) == 4
        assert all(s["reward_info"]["db_check"]["db_match"] for s in sims)

        no_token = _run(
            "--domain",
            "airline",
            "--num-tasks",
            "1",
            "--server",
            url,
            "--save-to",
            str(tmp_path / "x.json"),
        )
        assert no_token.exit_code != 0 and "wants a token" in no_token.output
        not_served = _run(
            "--domain",
            "retail",
            "--num-tasks",
            "1",
            "--server",
            url,
            "--server-token",
            "s3cret",
            "--save-to",
            str(tmp_path / "y.json"),
        )
        assert not_served.exit_code != 0 and "does not serve 'retail'" in not_served.output


def test_unreachable_server_is_one_error(tmp_path) -> None:
    result = _run(
        "--domain", "mock", "--server", "http://127.0.0.1:9", "--save-to", str(tmp_path / "z.json")
    )
    assert result.exit_code != 0 and "cannot reach tau-server" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "z.json").exists()
