"""The pin list and `tau-harness data` commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.data import data_app
from servers.engine.errors import DataError
from servers.engine.pins import (
    content_pins,
    content_sha256,
    fetch_reference,
    load_pins,
    verify_data_dir,
)
from tests.support.data import DATA_DIR


def test_pins_cover_the_manifest_files() -> None:
    pins = load_pins()
    assert len(pins["files"]) == 25 and len(pins["commit"]) == 40
    assert set(pins["content_checks"]) <= set(pins["files"])
    texts = content_pins(pins)
    assert len(texts) == 6 and not set(texts) & set(pins["files"])
    for pin in texts.values():
        assert len(pin["sha256"]) == 64 and pin["values"] == sorted(set(pin["values"]))


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
