"""`tau-harness data fetch --taubench` and `data verify --taubench`: the pinned original τ-bench
release, exported from its own code and checked file by file against `data/taubench_pins.json`.

The full fetch needs the release's archive: set TAU_TAUBENCH_RELEASE to a local copy of
`https://codeload.github.com/sierra-research/tau-bench/tar.gz/<pinned commit>` (no network is
used then); without it that test is skipped.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.reference_texts.taubench import (
    fetch_taubench,
    load_taubench_pins,
    verify_taubench_dir,
)
from tau_mcp.servers.engine.data import DataLocation
from tau_mcp.servers.engine.errors import DataError
from tests.support.data import TAUBENCH_DIR

cli = CliRunner()


@pytest.mark.needs_data("taubench")
def test_the_shared_copy_matches_the_pins_and_a_changed_file_is_named() -> None:
    assert verify_taubench_dir(TAUBENCH_DIR).ok
    pins = copy.deepcopy(load_taubench_pins())
    pins["files"]["taubench/domains/airline/wiki.md"] = "0" * 64
    pins["content_pins"]["taubench/prompts/user_verify_task0.json"]["sha256"] = "0" * 64
    problems = verify_taubench_dir(TAUBENCH_DIR, pins).problems
    assert problems == [
        "taubench/domains/airline/wiki.md: sha256 differs from the pin",
        "taubench/prompts/user_verify_task0.json: values differ from the content pin",
    ]
    done = cli.invoke(app, ["data", "verify", "--taubench-data-dir", str(TAUBENCH_DIR)])
    assert done.exit_code == 0 and "matches the pinned τ-bench release (37 files)" in done.output


def test_offline_or_a_bad_archive_is_one_sentence_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="could not download the τ-bench release"):
        fetch_taubench(tmp_path / "out", url="http://127.0.0.1:9/release.tar.gz", timeout=2)
    junk = tmp_path / "junk.tar.gz"
    junk.write_text("not an archive")
    with pytest.raises(DataError, match="not a readable tar.gz"):
        fetch_taubench(tmp_path / "out", url=junk.as_uri())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.tar.gz"]


def test_a_fetched_folder_is_used_only_once_it_exists(tmp_path: Path) -> None:
    location = DataLocation("taubench/domains/{folder}", "TAU_TEST_UNSET", tmp_path / "fetched")
    with pytest.raises(DataError, match="set TAU_TEST_UNSET"):
        location.root(Path("."))
    (tmp_path / "fetched").mkdir()
    assert location.root(Path(".")) == tmp_path / "fetched"


@pytest.mark.skipif(
    not os.environ.get("TAU_TAUBENCH_RELEASE"),
    reason="set TAU_TAUBENCH_RELEASE to the pinned τ-bench release's tar.gz to fetch from it",
)
def test_fetch_exports_the_pinned_release(tmp_path: Path) -> None:
    archive = Path(os.environ["TAU_TAUBENCH_RELEASE"]).resolve()
    folder = fetch_taubench(tmp_path / "taubench-data", url=archive.as_uri())
    assert verify_taubench_dir(folder).ok
    assert (folder / "MANIFEST.json").is_file()
