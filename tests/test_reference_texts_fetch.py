"""Getting and checking `tau2/reference_texts/`: pins, verify, the fetch pipeline and the pure
parts of the dump script (the part that runs the reference needs a network and Python 3.12+)."""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import sys
import tarfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from harness import data_cli
from harness.data_cli import data_app
from harness.reference_texts import build, dump
from servers.engine import pins as pinmod
from servers.engine.errors import DataError
from servers.engine.pins import fetch_reference, load_pins, pinned_files, verify_data_dir
from tests.conformance import DATA_DIR

TEXTS = DATA_DIR / "tau2" / "reference_texts"
needs_texts = pytest.mark.skipif(
    not (DATA_DIR / "MANIFEST.json").is_file() or not TEXTS.is_dir(),
    reason=f"reference data with reference_texts not found at {DATA_DIR}",
)
OFFLINE_URL = "http://127.0.0.1:9/{repository}/{commit}.tar.gz"


def _sha(text: str | bytes) -> str:
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


# --- pins and verify --------------------------------------------------------------------------


@needs_texts
def test_pins_equal_the_shared_manifest() -> None:
    manifest = json.loads((DATA_DIR / "MANIFEST.json").read_text())["files"]
    pins = load_pins()
    generated = pins["reference_texts"]["files"]
    assert set(generated) == {k for k in manifest if k.startswith("tau2/reference_texts/")}
    assert pinned_files(pins) == manifest


def _linked_copy(tmp_path: Path) -> Path:
    """A data folder whose release files link to the shared copy and whose texts are real."""
    folder = tmp_path / "data"
    for rel in pinned_files(load_pins()):
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel.startswith("tau2/reference_texts/"):
            shutil.copy(DATA_DIR / rel, target)
        else:
            target.symlink_to(DATA_DIR / rel)
    return folder


@needs_texts
def test_verify_checks_the_reference_texts(tmp_path: Path) -> None:
    folder = _linked_copy(tmp_path)
    good = verify_data_dir(folder)
    assert good.ok and good.checked == 31, good.problems
    tools = folder / "tau2/reference_texts/tools/airline.json"
    tools.write_text(tools.read_text().replace("Book a reservation.", "Book one."))
    (folder / "tau2/reference_texts/defaults.json").unlink()
    problems = "\n".join(verify_data_dir(folder).problems)
    assert "tools/airline.json: sha256 differs from the pin" in problems
    assert "defaults.json: missing (made by `tau-harness data fetch`)" in problems
    assert verify_data_dir(folder, generated=False).ok


@needs_texts
def test_data_verify_command_reports_a_tampered_text(tmp_path: Path) -> None:
    folder = _linked_copy(tmp_path)
    ok = CliRunner().invoke(data_app, ["verify", "--data-dir", str(folder)])
    assert ok.exit_code == 0 and "all 31 pinned files match" in ok.output
    (folder / "tau2/reference_texts/prompts.json").write_text("{}\n")
    bad = CliRunner().invoke(data_app, ["verify", "--data-dir", str(folder)])
    assert bad.exit_code == 1 and "prompts.json: sha256 differs" in bad.output
    assert "Traceback" not in bad.output


# --- fetch --------------------------------------------------------------------------------------


def test_fetch_offline_fails_with_one_sentence_before_generating(tmp_path: Path) -> None:
    called = []
    with pytest.raises(DataError, match="could not download the reference data") as err:
        fetch_reference(
            tmp_path / "out",
            timeout=2,
            url="http://127.0.0.1:9/none.tar.gz",
            generate=lambda *args: called.append(args),
        )
    assert "\n" not in str(err.value) and not called and not (tmp_path / "out").exists()


def test_data_fetch_command_offline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(pinmod, "ARCHIVE_URL", OFFLINE_URL)
    monkeypatch.setattr(data_cli, "find_python", lambda pins, explicit=None: sys.executable)
    result = CliRunner().invoke(
        data_app, ["fetch", "--dest", str(tmp_path / "out"), "--timeout", "2"]
    )
    errors = [ln for ln in result.output.splitlines() if ln.startswith("error:")]
    assert result.exit_code == 1 and len(errors) == 1
    assert "could not download the reference data" in errors[0]
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def _release_archive(tmp_path: Path) -> Path:
    """A tar.gz laid out like the release's: top folder, data/ with the pinned files."""
    path = tmp_path / "release.tar.gz"
    with tarfile.open(path, "w:gz", compresslevel=1) as archive:
        top = tarfile.TarInfo("tau2-bench-x")
        top.type = tarfile.DIRTYPE
        archive.addfile(top)
        project = b"[project]\nname = 'stand-in'\n"
        info = tarfile.TarInfo("tau2-bench-x/pyproject.toml")
        info.size = len(project)
        archive.addfile(info, io.BytesIO(project))
        for rel in load_pins()["files"]:
            archive.add(DATA_DIR / rel, arcname=f"tau2-bench-x/data/{rel}")
    return path


@needs_texts
@pytest.mark.parametrize("tamper", [False, True])
def test_fetch_installs_only_verified_texts(tmp_path: Path, tamper: bool) -> None:
    """The generate step writes into staging; the folder appears only if the texts match."""
    archive = _release_archive(tmp_path)
    seen: dict[str, Any] = {}

    def generate(payload: bytes, staging: Path, pins: dict) -> None:
        seen["project"] = build.unpack_source(payload, tmp_path / "src")
        shutil.copytree(TEXTS, staging / "tau2" / "reference_texts")
        if tamper:
            (staging / "tau2/reference_texts/tools/mock.json").write_text("[]\n")

    dest = tmp_path / "out"
    if tamper:
        with pytest.raises(DataError, match="tools/mock.json: sha256 differs"):
            fetch_reference(dest, url=archive.as_uri(), generate=generate)
        assert not dest.exists()
    else:
        assert fetch_reference(dest, url=archive.as_uri(), generate=generate) == dest
        assert verify_data_dir(dest).ok
    assert (seen["project"] / "pyproject.toml").is_file()
    assert not (seen["project"] / "data").exists()  # the release's data is not unpacked twice


def test_python_for_the_reference_must_be_recent_enough(tmp_path: Path, monkeypatch) -> None:
    pins = load_pins()
    if sys.version_info[:2] < (3, 12):
        with pytest.raises(DataError, match="is not Python 3.12 to 3.13"):
            build.find_python(pins, sys.executable)
        monkeypatch.setenv("PATH", str(tmp_path))
        monkeypatch.delenv(build.PYTHON_ENV, raising=False)
        with pytest.raises(DataError, match="pass --python PATH"):
            build.find_python(pins)
    else:
        assert build.find_python(pins) == sys.executable
    with pytest.raises(DataError, match="is not Python"):
        build.find_python(pins, str(tmp_path / "no-such-python"))


def test_unreadable_archive_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a readable tar.gz"):
        build.unpack_source(b"not a tarball", tmp_path)


# --- the dump script's pure parts --------------------------------------------------------------


def test_fill_and_templates() -> None:
    layout = {"a": {"$value": "x"}, "b": [1, {"$value": "y"}], "c": "note"}
    assert dump.markers(layout) == {"x", "y"}
    assert dump.fill(layout, {"x": {"k": 1}, "y": None}) == {
        "a": {"k": 1},
        "b": [1, None],
        "c": "note",
    }
    with pytest.raises(KeyError, match="no value computed for 'y'"):
        dump.fill(layout, {"x": 1})
    s = dump.sentinel("who")
    assert dump.as_template(f"Hi {s}!", {s: "who"}) == "Hi {who}!"
    with pytest.raises(ValueError):
        dump.as_template("Hi!", {s: "who"})
    assert dump.serialize({"é": [1]}) == '{\n  "é": [\n    1\n  ]\n}\n'
    assert dump.trial_seeds(7, 3) == dump.trial_seeds(7, 3) != dump.trial_seeds(8, 3)


def _lookup(document: Any, name: str) -> Any:
    for key in name.split("."):
        document = document[key]
    return document


@needs_texts
def test_layout_refills_to_the_pinned_bytes() -> None:
    """The layout plus the values the dump computes rebuild each pinned file byte for byte:
    here the values are read back from the pinned files, so the shape, the notes and the
    serialization are what is tested."""
    layout = dump.load_layout()
    pins = load_pins()["reference_texts"]["files"]
    shapes = {"prompts.json": layout["prompts.json"], "defaults.json": layout["defaults.json"]}
    for domain in dump.DOMAINS:
        key = "tools with solo" if domain in dump.SOLO_DOMAINS else "tools without solo"
        shapes[f"tools/{domain}.json"] = layout[key]
    for rel, shape in shapes.items():
        pinned = json.loads((TEXTS / rel).read_text())
        values = {name: _lookup(pinned, name) for name in dump.markers(shape)}
        assert _sha(dump.serialize(dump.fill(shape, values))) == pins[f"tau2/reference_texts/{rel}"]
    defaults = json.loads((TEXTS / "defaults.json").read_text())
    assert dump.trial_seeds(300, 5) == defaults["per_trial_seed"]["seed_300_first_5_trials"]
    choices = set(layout["choices"]["user_simulator_gets"].values())
    for domain in dump.DOMAINS:
        assert (
            json.loads((TEXTS / f"tools/{domain}.json").read_text())["user_simulator_gets"]
            in choices
        )


def test_layout_holds_no_reference_text() -> None:
    """Every model-facing value is a marker: no template, prompt or schema is in our repo."""
    layout = dump.load_layout()
    names = set().union(
        *(dump.markers(layout[k]) for k in layout if k.endswith("json") or k.startswith("tools"))
    )
    for needed in (
        "agent.system_prompt_template",
        "agent.instruction",
        "user_simulator.system_prompt_template",
        "nl_assertions_judge.system_prompt",
        "agent",
        "user",
        "solo.tools_in_order",
    ):
        assert needed in names
    text = (Path(dump.__file__).with_name("layout.json")).read_text()
    assert "<instructions>" not in text and '"parameters"' not in text
