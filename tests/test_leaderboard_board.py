"""`tau-harness leaderboard`: the reference's published submissions ranked and shown as the
reference's `tau2 leaderboard` showed them (recorded), Markdown and JSON, our own folders."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from tau_mcp.harness.leaderboard import board
from tests.support.data import DATA_DIR
from tests.support.leaderboard import LEADERBOARD_DIR, invoke, needs_fixture

SUBMISSIONS = DATA_DIR / "tau2" / "leaderboard" / "submissions"
needs_submissions = pytest.mark.skipif(
    not SUBMISSIONS.is_dir(), reason=f"published submissions not found at {SUBMISSIONS}"
)

# the recorded commands: (domain, metric, limit)
RECORDED = {
    "overall": (None, "pass_1", None),
    "--domain retail": ("retail", "pass_1", None),
    "--domain banking_knowledge": ("banking_knowledge", "pass_1", None),
    "--metric pass_4 --limit 2": (None, "pass_4", 2),
}


def _render(domain, metric, limit) -> str:
    entries, warnings = board.load_entries([SUBMISSIONS])
    assert warnings == []
    rows = board.rank(entries, metric, domain)
    shown = rows[:limit] if limit else rows
    out = io.StringIO()
    console = Console(file=out, width=160, color_system=None, legacy_windows=False)
    console.print()
    console.print(board.as_table(shown, domain, metric, len(entries)))
    console.print()
    console.print(f"Total submissions: {len(entries)}", style="dim")
    return out.getvalue()


@needs_submissions
@needs_fixture
@pytest.mark.parametrize("command", list(RECORDED))
def test_the_same_table_as_the_reference(command):
    recorded = json.loads((LEADERBOARD_DIR / "fixture.json").read_text())["steps"]["leaderboard"]
    assert _render(*RECORDED[command]) == recorded[command]["stdout"]


@needs_submissions
def test_markdown_and_json(tmp_path):
    md = invoke("leaderboard", "--format", "md", "-m", "pass_4", "--data-dir", DATA_DIR)
    assert md.exit_code == 0, md.output
    lines = [line for line in md.output.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| Rank | Model | Organization | Modality | pass^4 | Retail")
    assert lines[1].startswith("| 1 | RAFT-30B-A3B |") and "61.4%" in lines[1]
    assert lines[2].startswith("| 2 | Claude Opus 4.5 |") and "| 11.3% |" in lines[2]
    js = invoke("leaderboard", "--format", "json", "-d", "retail", "--data-dir", DATA_DIR)
    rows = json.loads(js.output)
    assert [r["rank"] for r in rows] == [1, 2, 3]
    assert rows[0]["submission_id"] == "raft-30b-a3b_neu_2026-04-29"
    assert rows[0]["score"] == rows[0]["results"]["retail"]["pass_1"] == 82.45614035087719


@needs_submissions
def test_cost_ranks_cheapest_first_and_skips_unknown_costs():
    js = invoke("leaderboard", "--format", "json", "-m", "cost", "--data-dir", DATA_DIR)
    rows = json.loads(js.output)
    assert [r["model_name"] for r in rows] == ["RAFT-30B-A3B", "Claude Opus 4.5"]
    claude = rows[1]
    assert claude["score"] == (0.38695 + 0.39919 + 0.71992) / 3  # banking's cost is null


@needs_submissions
def test_our_folders_and_single_submissions_mix_with_published_ones(tmp_path):
    ours = tmp_path / "ours"
    ours.mkdir()
    mine = ours / "fake_org_2026-01-01"
    mine.mkdir()
    (mine / "submission.json").write_text(
        json.dumps(
            {
                "model_name": "Fake",
                "model_organization": "Org",
                "results": {"retail": {"pass_1": 99.0}},
            }
        )
    )
    broken = ours / "broken_org_2026-01-01"
    broken.mkdir()
    (broken / "submission.json").write_text("{not json")
    (ours / ".hidden").mkdir()
    single = SUBMISSIONS / "gpt-4-1_openai_2024-06-20"
    result = invoke("leaderboard", ours, single, "--format", "json", "-d", "retail")
    assert result.exit_code == 0, result.output
    start = result.output.index("[")
    rows = json.loads(result.output[start:])
    assert [r["model_name"] for r in rows] == ["Fake", "GPT-4.1"]
    assert "warning: skipped" in result.output and "broken_org" in result.output


def test_a_manifest_lists_the_submissions(tmp_path):
    for name, score in (("a", 10.0), ("b", 20.0), ("c", 30.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "submission.json").write_text(
            json.dumps({"model_name": name, "results": {"airline": {"pass_1": score}}})
        )
    (tmp_path / "manifest.json").write_text(json.dumps({"submissions": ["a", "b"]}))
    entries, _ = board.load_entries([tmp_path])
    assert [e.submission_id for e in entries] == ["a", "b"]


def test_bad_arguments_are_one_sentence(tmp_path):
    for args, message in (
        (["-m", "pass_9"], "unknown metric 'pass_9'"),
        (["-d", "mock"], "unknown domain 'mock'"),
        (["--format", "csv"], "unknown format 'csv'"),
        ([str(tmp_path / "nowhere")], "is not a folder"),
    ):
        result = invoke("leaderboard", str(tmp_path), *args)
        assert result.exit_code == 1 and message in result.output, (args, result.output)


def test_no_published_submissions_without_data(tmp_path: Path):
    result = invoke("leaderboard", "--data-dir", tmp_path)
    assert result.exit_code == 1 and "no published submissions" in result.output


def _submission(folder: Path, name: str, pass_1: float, faults: str | None) -> None:
    """A submission folder with an airline trajectory file, a robustness run's when `faults`
    names a plan (its header's `info.faults`, as `run --faults` writes it)."""
    folder.mkdir()
    (folder / "submission.json").write_text(
        json.dumps({"model_name": name, "results": {"airline": {"pass_1": pass_1}}})
    )
    info = {"faults": {"spec": faults, "rates": {"transient": 0.2}}} if faults else {}
    (folder / "trajectories").mkdir()
    (folder / "trajectories" / "airline_results.json").write_text(
        json.dumps({"info": info, "simulations": []})
    )


def test_a_submission_of_robustness_runs_is_marked(tmp_path):
    """Issue 34, item 4: a submission whose trajectories were run under injected faults ranks
    with its label `[faults: <spec>]` in every format and a warning, never as a plain score."""
    _submission(tmp_path / "clean", "Clean", 70.0, None)
    _submission(tmp_path / "flaky", "Flaky", 60.0, "transient=0.2")
    result = invoke("leaderboard", tmp_path)
    assert result.exit_code == 0, result.output
    assert "warning: flaky holds robustness runs (injected tool faults: transient=0.2)" in (
        result.output
    )
    entries, _ = board.load_entries([tmp_path])
    out = io.StringIO()
    console = Console(file=out, width=160, color_system=None, legacy_windows=False)
    console.print(board.as_table(board.rank(entries, "pass_1"), None, "pass_1", len(entries)))
    assert "Flaky [faults: transient=0.2]" in out.getvalue()
    assert "Clean [" not in out.getvalue()
    md = invoke("leaderboard", tmp_path, "--format", "md")
    assert "| 2 | Flaky [faults: transient=0.2] |" in md.output
    rows = json.loads(invoke("leaderboard", tmp_path, "--format", "json").stdout)
    assert [(r["model_name"], r["faults"]) for r in rows] == [
        ("Clean", []),
        ("Flaky", ["transient=0.2"]),
    ]
