"""One writer for our results layout: `run` (its results file, saved as simulations finish),
`evaluate` and `review` (a whole document at once) and `convert-results` write the same bytes for
the same simulations, and a record the harness built reads back as the same record.

Timestamps are not an issue to hide: `evaluate` keeps the run's header (its timestamp included)
and each simulation as recorded, replacing only `reward_info` with the re-graded one, so
re-grading a run's own file, which grades the same, must give that file back byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.results import SimulationRecord, load_results, records, write_document
from tau_mcp.harness.results.layouts import detect, tau_mcp_text
from tau_mcp.servers.engine.data import DEMO_DIR

pytestmark = pytest.mark.skipif(
    not (DEMO_DIR / "tau2").is_dir(), reason=f"bundled demo data missing ({DEMO_DIR})"
)


def _invoke(*args: object) -> None:
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output


def _run(path: Path, *extra: object) -> Path:
    """The oracle on the bundled demo (mock domain), two trials of every task."""
    oracle = "run --domain mock --agent oracle --user scripted --num-trials 2".split()
    _invoke(*oracle, "--data-dir", DEMO_DIR, "--save-to", path, *extra)
    return path


def _evaluate(source: Path, target: Path) -> Path:
    _invoke("evaluate", "--input", source, "--save-to", target, "--data-dir", DEMO_DIR)
    return target


@pytest.fixture
def demo_run(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("TAU2_DATA_DIR", raising=False)
    return _run(tmp_path / "run.json")


def test_evaluate_writes_the_bytes_run_wrote(demo_run, tmp_path):
    run_bytes = demo_run.read_bytes()
    assert detect(demo_run) == "tau-mcp" and len(load_results(demo_run)["simulations"]) > 2
    regraded = _evaluate(demo_run, tmp_path / "regraded.json")
    assert regraded.read_bytes() == run_bytes
    # and re-grading the re-graded file changes nothing either
    assert _evaluate(regraded, tmp_path / "again.json").read_bytes() == run_bytes


def test_every_whole_document_writer_is_the_run_writer(demo_run, tmp_path):
    run_bytes = demo_run.read_bytes()
    document = json.loads(run_bytes)
    assert tau_mcp_text(document).encode("utf-8") == run_bytes
    write_document(tmp_path / "whole.json", document)  # `review`'s and `evaluate`'s writer
    assert (tmp_path / "whole.json").read_bytes() == run_bytes
    # convert-results into the reference's layouts and back to ours: the run's bytes again
    for layout in ("json", "dir"):
        middle = tmp_path / layout / "results.json"
        _invoke("convert-results", demo_run, "--to", layout, "-o", middle)
        back = tmp_path / f"back-{layout}.json"
        _invoke("convert-results", middle, "--to", "tau-mcp", "-o", back)
        assert back.read_bytes() == run_bytes, layout


def test_records_read_back_as_the_harness_built_them(demo_run):
    document = load_results(demo_run)
    for sim, typed in zip(document["simulations"], records(document), strict=True):
        read = SimulationRecord.read(sim)
        assert read.layout() == sim and list(read.layout()) == list(sim)
        assert typed.layout() == sim and typed.reward == sim["reward_info"]["reward"]
        assert not read.infrastructure_error and read.info["episode_id"]


@pytest.mark.e2e
def test_a_run_with_workers_is_written_by_the_same_writer(tmp_path, monkeypatch):
    """Records that came back from worker processes (as layouts) are written, and re-graded,
    exactly as local ones are."""
    monkeypatch.delenv("TAU2_DATA_DIR", raising=False)
    run = _run(tmp_path / "workers.json", "--workers", "2")
    sims = load_results(run)["simulations"]
    assert sims and all(s["reward_info"] is not None for s in sims)
    assert _evaluate(run, tmp_path / "regraded.json").read_bytes() == run.read_bytes()
