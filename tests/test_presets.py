"""Run presets: the built-in ones expand to the documented options, options given win, the
results header records what the preset set, users add their own, errors are one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tau_mcp.harness import presets
from tests.support.data import DATA_DIR
from tests.support.leaderboard import invoke

ROOT = Path(__file__).resolve().parents[1]
needs_mock = pytest.mark.skipif(
    not (DATA_DIR / "tau2" / "domains" / "mock").is_dir(), reason=f"no data at {DATA_DIR}"
)

DOCUMENTED = {
    "tau2-leaderboard": {
        "task_split": "base",
        "num_trials": 4,
        "user": "llm",
        "user_llm": "gpt-5.2",
        "user_llm_args": {"reasoning_effort": "low"},
        "seed": 300,
        "max_steps": 200,
        "max_errors": 10,
    },
    "aa-banking": {
        "domain": "banking_knowledge",
        "retrieval_config": "bm25_grep",
        "task_split": "base",
        "num_trials": 5,
        "user": "llm",
        "user_llm": "gpt-5.4-mini",
        "judge_llm": "gpt-5.4-mini",
        "max_steps": 200,
        "max_errors": 10,
    },
}


@pytest.fixture(autouse=True)
def _no_user_presets(monkeypatch, tmp_path):
    monkeypatch.setenv(presets.ENV_VAR, str(tmp_path / "no-presets"))


@pytest.mark.parametrize("name", list(DOCUMENTED))
def test_builtin_presets_set_the_documented_options(name):
    preset = presets.load(name)
    assert preset.builtin and preset.options == DOCUMENTED[name]
    docs = (ROOT / "docs" / "leaderboard.md").read_text()
    for _, flag, value in presets.describe(preset, _run_flags()):
        assert f"`{flag} {value}`" in docs, (name, flag, value)


def test_the_preset_files_ship_with_the_package():
    from importlib.resources import files

    shipped = {p.name for p in files("tau_mcp.harness.presets").iterdir()}
    assert {"tau2-leaderboard.toml", "aa-banking.toml"} <= shipped
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert '"*.toml"' in pyproject  # package data of every harness package


def _run_flags() -> dict[str, str]:
    import typer

    from tau_mcp.harness.cli import app

    return presets.run_flags(typer.main.get_command(app).commands["run"].params)


def _run_params() -> set[str]:
    import typer

    from tau_mcp.harness.cli import app

    return {p.name for p in typer.main.get_command(app).commands["run"].params}


@needs_mock
def test_a_preset_fills_options_given_ones_win_and_the_header_records_it(tmp_path):
    out = tmp_path / "r.json"
    result = invoke(
        "run", "--preset", "tau2-leaderboard", "--domain", "mock", "--agent", "oracle",
        "--user", "scripted", "--num-trials", "1", "--num-tasks", "2",
        "--data-dir", DATA_DIR, "--save-to", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = json.loads(out.read_text())["info"]
    assert info["num_trials"] == 1  # given: wins over the preset's 4
    assert info["user_info"]["implementation"] == "scripted"
    assert info["user_info"]["llm"] == "gpt-5.2"  # from the preset
    assert info["user_info"]["llm_args"] == {"reasoning_effort": "low"}
    assert info["seed"] == 300 and info["max_steps"] == 200 and info["max_errors"] == 10
    recorded = info["preset"]
    assert recorded["name"] == "tau2-leaderboard" and recorded["file"] == "built-in"
    assert recorded["set"] == {
        k: v for k, v in DOCUMENTED["tau2-leaderboard"].items() if k not in ("num_trials", "user")
    }
    assert sorted(recorded["overridden"]) == ["num_trials", "user"]


@needs_mock
def test_a_run_without_a_preset_records_none(tmp_path):
    out = tmp_path / "r.json"
    result = invoke(
        "run", "--domain", "mock", "--agent", "oracle", "--user", "scripted",
        "--num-tasks", "1", "--data-dir", DATA_DIR, "--save-to", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "preset" not in json.loads(out.read_text())["info"]


def test_show_lists_what_a_preset_sets_and_what_is_overridden():
    result = invoke("run", "--preset", "tau2-leaderboard", "--show", "--num-trials", "8")
    assert result.exit_code == 0, result.output
    assert "--user-llm-args" in result.output and "reasoning_effort" in result.output
    assert "4 (given on the command line instead)" in result.output
    listing = invoke("presets")
    assert listing.exit_code == 0
    assert "tau2-leaderboard" in listing.output and "aa-banking" in listing.output
    one = invoke("presets", "aa-banking")
    assert "bm25_grep" in one.output and "gpt-5.4-mini" in one.output


def test_aa_banking_names_what_the_run_command_has_or_lacks():
    """--retrieval-config arrives with the banking_knowledge domain (other branches): until
    then the preset says so in one sentence; after, it expands like any other."""
    result = invoke("run", "--preset", "aa-banking", "--show")
    if "retrieval_config" in _run_params():
        assert result.exit_code == 0 and "bm25_grep" in result.output
    else:
        assert result.exit_code == 1
        assert "sets --retrieval-config, which this tau-harness run does not have yet" in (
            result.output
        )


def test_users_add_and_shadow_presets(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    folder.mkdir()
    monkeypatch.setenv(presets.ENV_VAR, str(folder))
    (folder / "tau2-leaderboard.toml").write_text(
        'description = "mine"\n[options]\nnum_trials = 8\n'
    )
    (folder / "quick.toml").write_text('[options]\nnum_tasks = 2\nagent = "oracle"\n')
    listed = {p.name: p for p in presets.available()}
    assert listed["tau2-leaderboard"].options == {"num_trials": 8}
    assert not listed["tau2-leaderboard"].builtin and "quick" in listed
    shown = invoke("run", "--preset", "quick", "--show")
    assert shown.exit_code == 0 and "--num-tasks" in shown.output


def test_preset_errors_are_one_sentence(tmp_path, monkeypatch):
    folder = tmp_path / "presets"
    folder.mkdir()
    monkeypatch.setenv(presets.ENV_VAR, str(folder))
    (folder / "zero.toml").write_text("[options]\nnum_trials = 0\n")
    (folder / "broken.toml").write_text("[options\n")
    (folder / "flat.toml").write_text("num_trials = 2\n")
    (folder / "unknown.toml").write_text("[options]\ncolour = 'blue'\n")
    for args, message in (
        (["--preset", "zero", "--domain", "mock"], "preset zero: --num-trials 0 is not valid"),
        (["--preset", "broken"], "cannot read preset broken"),
        (["--preset", "flat"], "needs an [options] table"),
        (["--preset", "unknown"], "sets --colour, which this tau-harness run does not have"),
        (["--preset", "nope"], "no preset named 'nope'"),
        (["--show"], "--show goes with --preset NAME"),
        ([], "--domain is required"),
    ):
        result = invoke("run", *args)
        assert result.exit_code == 1, (args, result.output)
        assert message in result.output and result.output.count("\n") == 1, result.output


def test_a_preset_option_is_shown_with_its_real_flag(tmp_path):
    """`retrieval_kwargs` is typed `--retrieval-config-kwargs` (the reference's spelling): a
    preset's options are shown with the flags `run` really has."""
    import typer

    from tau_mcp.harness.cli import app

    flags = presets.run_flags(typer.main.get_command(app).commands["run"].params)
    assert flags["retrieval_kwargs"] == "--retrieval-config-kwargs"
    preset = presets.Preset("x", "", {"retrieval_kwargs": {"top_k": 3}, "num_trials": 2}, tmp_path)
    assert presets.describe(preset, flags) == [
        ("retrieval_kwargs", "--retrieval-config-kwargs", '{"top_k": 3}'),
        ("num_trials", "--num-trials", "2"),
    ]
    shown = invoke("presets", "--help")  # the listing command still loads
    assert shown.exit_code == 0
