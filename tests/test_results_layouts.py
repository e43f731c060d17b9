"""`convert-results`: our results file to and from the reference's json and dir layouts and back
to the same bytes, on our files and the reference's; the reference's own conversion reproduced;
`view`, `report` and `evaluate` reading every layout."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tau_mcp.harness.results import ResultsFile, load_results
from tau_mcp.harness.results.layouts import detect
from tests.support.data import DATA_DIR
from tests.support.leaderboard import (
    LEADERBOARD_DIR,
    fake_runs,  # noqa: F401 - fixture
    fake_server,  # noqa: F401 - fixture
    invoke,
    needs_board_data,
    needs_fixture,
    reference_runs,  # noqa: F401 - fixture
)

CONVERT = LEADERBOARD_DIR / "convert"


def _ours(path: Path) -> Path:
    """A small results file in our layout, by our writer, with text and numbers that differ
    between JSON writers (non-ASCII, tiny and huge floats)."""
    results = ResultsFile(
        path,
        {"num_trials": 1, "environment_info": {"domain_name": "mock"}, "note": "café — ✓"},
        [{"id": "t1", "description": {"purpose": "naïve"}}],
    )
    for i, cost in enumerate([1e-7, 1.5e-05, 1e16, 0.1, 3]):
        results.add(
            {
                "id": f"sim-{i}",
                "task_id": "t1",
                "trial": i,
                "agent_cost": cost,
                "reward_info": {"reward": 1.0},
                "termination_reason": "user_stop",
                "messages": [{"role": "user", "content": "Grüße — ünïcode ✓ \u2028"}],
            },
            save=False,
        )
    results.finish()
    return path


def _snapshot(path: Path) -> dict[str, bytes]:
    folder = path.parent
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _convert(*args) -> None:
    result = invoke("convert-results", *args)
    assert result.exit_code == 0, result.output


def _round_trips(source: Path, tmp_path: Path) -> None:
    """In place, source layout -> each other layout -> source layout: the same bytes, and no
    folder or backup left over."""
    start = detect(source)
    for middle in ("tau-mcp", "json", "dir"):
        if middle == start:
            continue
        work = tmp_path / f"{start}-{middle}"
        work.mkdir()
        path = work / "results.json"
        shutil.copy(source, path)
        before = _snapshot(path)
        _convert(path, "--to", middle, "--no-backup")
        assert detect(path) == middle
        assert load_results(path)["simulations"] == json.loads(source.read_text())["simulations"]
        _convert(path, "--to", start, "--no-backup")
        assert _snapshot(path) == before, (start, middle)


def test_our_file_round_trips_through_both_reference_layouts(tmp_path):
    source = _ours(tmp_path / "ours.json")
    assert detect(source) == "tau-mcp"
    _round_trips(source, tmp_path)


@needs_board_data
def test_a_real_run_round_trips(tmp_path, fake_runs):  # noqa: F811
    _round_trips(fake_runs["airline"], tmp_path)


@needs_fixture
def test_the_reference_run_files_round_trip(tmp_path, reference_runs):  # noqa: F811
    assert detect(reference_runs["airline"]) == "json"
    _round_trips(reference_runs["airline"], tmp_path)


@needs_fixture
def test_json_to_dir_is_what_the_reference_writes_and_back_is_the_input(tmp_path):
    path = tmp_path / "results.json"
    shutil.copy(CONVERT / "input.json", path)
    result = invoke("convert-results", path)  # default: a single file becomes a folder
    assert result.exit_code == 0, result.output
    assert "backup:" in result.output and (tmp_path / "results.json.bak").is_file()
    recorded = CONVERT / "json_to_dir"
    want = {
        str(p.relative_to(recorded)): p.read_bytes() for p in recorded.rglob("*") if p.is_file()
    }
    got = {k: v for k, v in _snapshot(path).items() if not k.endswith(".bak")}
    assert got == want
    back = tmp_path / "back.json"
    _convert(path, "-o", back)  # default from a folder: the single json file
    assert back.read_bytes() == (CONVERT / "input.json").read_bytes()
    # the reference's converter keeps the index it built and reads the simulations in file-name
    # order, so its json differs from its input; the simulations themselves are the same
    theirs = json.loads((CONVERT / "dir_to_json.json").read_text())["simulations"]
    ours = json.loads(back.read_text())["simulations"]
    assert [s["id"] for s in theirs] == sorted(s["id"] for s in ours) != [s["id"] for s in ours]
    assert sorted(theirs, key=lambda s: s["id"]) == sorted(ours, key=lambda s: s["id"])


def test_refusals_are_one_sentence(tmp_path):
    source = _ours(tmp_path / "a.json")
    result = invoke("convert-results", source, "--to", "tau-mcp")
    assert result.exit_code == 0 and "tau-mcp layout already" in result.output
    result = invoke("convert-results", source, "--to", "yaml")
    assert result.exit_code == 1 and "unknown layout 'yaml'" in result.output
    (tmp_path / "a.json.journal.jsonl").write_text("")
    result = invoke("convert-results", source, "--to", "json")
    assert result.exit_code == 1 and "unfinished run" in result.output
    (tmp_path / "a.json.journal.jsonl").unlink()
    (tmp_path / "simulations").mkdir()
    result = invoke("convert-results", source, "--to", "dir")
    assert result.exit_code == 1 and "cannot become a folder in place" in result.output
    result = invoke("convert-results", source, "--to", "json", "-o", source)
    assert result.exit_code == 1 and "already exists" in result.output
    result = invoke("convert-results", tmp_path / "missing.json")
    assert result.exit_code == 1 and "no such file" in result.output
    for line in result.output.strip().splitlines():
        assert "Traceback" not in line


def test_a_folder_whose_index_does_not_match_its_files_is_refused(tmp_path):
    source = _ours(tmp_path / "a.json")
    folder = tmp_path / "dir"
    _convert(source, "--to", "dir", "-o", folder)
    next((folder / "simulations").iterdir()).unlink()
    result = invoke("view", folder)
    assert result.exit_code == 1
    assert "simulation index does not match" in result.output and "1 indexed" in result.output


@needs_board_data
def test_view_report_and_evaluate_read_every_layout(tmp_path, fake_runs):  # noqa: F811
    source = fake_runs["airline"]
    folder = tmp_path / "dir"
    _convert(source, "--to", "dir", "-o", folder)
    reference_json = tmp_path / "ref.json"
    _convert(source, "--to", "json", "-o", reference_json)
    for given in (folder, folder / "results.json", reference_json):
        shown = invoke("view", given)
        assert shown.exit_code == 0 and "pass^1" in shown.output, shown.output
        report = invoke("report", given, "--format", "json")
        assert report.exit_code == 0, report.output
        out = tmp_path / f"regraded-{given.name}.json"
        graded = invoke(
            "evaluate", "--domain", "airline", "--input", given, "--save-to", out,
            "--judge-llm", "none", "--data-dir", DATA_DIR,
        )  # fmt: skip
        assert graded.exit_code == 0, graded.output
        rewards = [s["reward_info"]["reward"] for s in load_results(out)["simulations"]]
        assert rewards == [s["reward_info"]["reward"] for s in load_results(source)["simulations"]]


@pytest.mark.parametrize("layout", ["json", "dir"])
def test_the_simulations_keep_the_run_order(tmp_path, layout):
    source = _ours(tmp_path / "a.json")
    out = tmp_path / "out"
    _convert(source, "--to", layout, "-o", out)
    ids = [s["id"] for s in load_results(out)["simulations"]]
    assert ids == [f"sim-{i}" for i in range(5)]
