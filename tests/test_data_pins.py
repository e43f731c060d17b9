"""The pin list and `tau-harness data` commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli.data import data_app
from tau_mcp.servers.engine.data import load_pins
from tau_mcp.servers.engine.errors import DataError
from tau_mcp.servers.engine.pins import (
    archive_sources,
    content_pins,
    content_sha256,
    fetch_reference,
    verify_data_dir,
)
from tests.support.data import DATA_DIR


def test_pins_cover_the_manifest_files() -> None:
    pins = load_pins()
    files = pins["files"]
    assert len(pins["commit"]) == 40
    assert set(pins["content_checks"]) <= set(files)
    # The data we use: four domains plus banking_knowledge (698 documents, 97 task files, 17
    # prompt files, db.json, tasks.json), telecom's task sets, the leaderboard's schema and
    # submissions, and the user simulator's guidelines.
    banking = [f for f in files if f.startswith("tau2/domains/banking_knowledge/")]
    assert len([f for f in banking if "/documents/" in f]) == 698
    assert len([f for f in banking if "/tasks/" in f]) == 97
    assert len([f for f in banking if "/prompts/" in f]) == 17
    for rel in (
        "tau2/domains/banking_knowledge/db.json",
        "tau2/domains/banking_knowledge/tasks.json",
        "tau2/domains/telecom/tasks_small.json",
        "tau2/domains/telecom/tasks_full.json",
        "tau2/leaderboard/schema.json",
    ):
        assert rel in files, rel
    assert len([f for f in files if f.startswith("tau2/leaderboard/submissions/")]) == 3
    # the rebuilt copies are checked by content
    assert "tau2/domains/telecom/tasks_full.json" in pins["content_checks"]
    texts = content_pins(pins)
    assert len(texts) == 11 and not set(texts) & set(files)
    for pin in texts.values():
        assert len(pin["sha256"]) == 64 and pin["values"] == sorted(set(pin["values"]))


def test_archive_sources_follow_the_release_layout() -> None:
    sources = archive_sources(load_pins())
    assert sources["tau2/domains/mock/db.json"] == "data/tau2/domains/mock/db.json"
    assert (
        sources["tau2/leaderboard/schema.json"] == "web/leaderboard/public/submissions/schema.json"
    )


def test_verify_without_reference_data_says_so(tmp_path: Path, monkeypatch) -> None:
    """No --data-dir, no TAU2_DATA_DIR and nothing fetched: only the demo set is there, which
    is not the reference's data; verify says that and how to get it, not that 800 files fail."""
    monkeypatch.delenv("TAU2_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "empty-cache"))
    result = CliRunner().invoke(data_app, ["verify"])
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 1 and len(lines) == 1, result.output
    assert "no reference data is configured" in lines[0]
    assert "tau-harness data fetch" in lines[0] and "pinned files fail" not in result.output


def test_content_sha256_depends_on_the_values_only() -> None:
    paths = ["a/b", "l/1", "t"]
    document = {"a": {"b": "x", "note": "one"}, "l": [0, {"k": [1.5, None]}], "t": True}
    same = {"t": True, "note": "two", "l": [9, {"k": [1.5, None]}], "a": {"note": "", "b": "x"}}
    assert content_sha256(document, paths) == content_sha256(same, paths)
    for changed in (
        {**document, "t": False},
        {**document, "a": {"b": "x "}},
        {**document, "l": [0, {"k": [1.5]}]},
    ):
        assert content_sha256(changed, paths) != content_sha256(document, paths)
    with pytest.raises(KeyError, match="a/c"):
        content_sha256(document, ["a/c"])
    with pytest.raises(KeyError, match="l/2"):
        content_sha256(document, ["l/2"])


@pytest.mark.needs_data("manifest")
def test_shared_data_verifies() -> None:
    result = verify_data_dir(DATA_DIR)
    assert result.ok, result.problems


@pytest.mark.needs_data("manifest")
def test_tampered_data_is_reported(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    shutil.copytree(DATA_DIR, folder)
    (folder / "tau2/domains/mock/policy.md").write_text("changed")
    db = json.loads((folder / "tau2/domains/airline/db.json").read_text())
    db["users"].popitem()
    (folder / "tau2/domains/airline/db.json").write_text(json.dumps(db))
    (folder / "tau2/user_simulator/simulation_guidelines.md").unlink()
    problems = "\n".join(verify_data_dir(folder).problems)
    assert "mock/policy.md: sha256 differs" in problems
    assert "airline/db.json: record counts" in problems
    assert "simulation_guidelines.md: missing" in problems


def test_fetch_without_network_fails_with_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="could not download the reference data"):
        fetch_reference(tmp_path / "out", timeout=2, url="http://127.0.0.1:9/none.tar.gz")
    assert not (tmp_path / "out").exists()


def test_data_cli_reports_errors_without_traceback(tmp_path: Path) -> None:
    result = CliRunner().invoke(data_app, ["verify", "--data-dir", str(tmp_path / "missing")])
    assert (
        result.exit_code == 1
        and "does not exist" in result.output
        and "Traceback" not in result.output
    )
