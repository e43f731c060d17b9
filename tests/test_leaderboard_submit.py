"""`submit prepare` and `submit validate` on fake-model runs of every domain: a submission that
passes, each of the board's rules broken once (with its message), the schema check, metadata
from options, a TOML file and prompts; the reference's submission reproduced byte for byte; and
(with $TAU_REFERENCE_PYTHON) the reference's own `tau2 submit validate` accepting our folder."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from tau_mcp.harness.leaderboard.schema import load_schema, schema_problems
from tests.support.data import DATA_DIR
from tests.support.leaderboard import (
    AGENT,
    BOARD_DOMAINS,
    LEADERBOARD_DIR,
    USER,
    edited_copy,
    fake_run,
    fake_runs,  # noqa: F401 - fixture
    fake_server,  # noqa: F401 - fixture
    invoke,
    needs_board_data,
    needs_fixture,
    reference_python,
    reference_runs,  # noqa: F401 - fixture
    run_reference,
)

pytestmark = needs_board_data


def _board(runs: dict[str, Path]) -> list[Path]:
    return [runs[d] for d in BOARD_DOMAINS]


def prepare(*args, input: str | None = None):
    return invoke("submit", "prepare", *args, "--data-dir", DATA_DIR, input=input)


def _folder(output: Path) -> Path:
    (folder,) = [p for p in output.iterdir() if p.is_dir()]
    return folder


def _errors(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error: [")]


def test_prepare_with_no_options_and_no_terminal_makes_a_valid_folder(tmp_path, fake_runs):  # noqa: F811
    result = prepare(*_board(fake_runs), "-o", tmp_path)
    assert result.exit_code == 0, result.output
    folder = _folder(tmp_path)
    submission = json.loads((folder / "submission.json").read_text())
    assert schema_problems(submission, load_schema(DATA_DIR)) == []
    # defaults from the runs, as the reference's prompts default
    assert submission["model_name"] == AGENT
    assert submission["methodology"]["user_simulator"] == USER
    assert submission["model_organization"] == submission["submitting_organization"]
    assert submission["is_new"] is True and submission["submission_type"] == "standard"
    assert submission["methodology"]["tau2_bench_version"] == "1.0.1"
    # Who the user was (issue 33): the runs' headers, in the methodology's notes.
    notes = submission["methodology"]["notes"]
    assert notes.count(f"tau-mcp llm user v2, model {USER}, args ") >= 1
    assert "prompt sha256 " in notes and "guidelines sha256 " in notes
    assert folder.name.startswith("openai-fake-agent_my-organization_")
    assert sorted(submission["results"]) == sorted(BOARD_DOMAINS)
    for domain in BOARD_DOMAINS:
        copied = folder / "trajectories" / f"{domain}_results.json"
        assert copied.read_bytes() == fake_runs[domain].read_bytes()
        assert submission["trajectory_files"][domain] == copied.name
        assert set(submission["results"][domain]) == {
            "pass_1",
            "pass_2",
            "pass_3",
            "pass_4",
            "cost",
        }
    checked = invoke("submit", "validate", folder, "--data-dir", DATA_DIR)
    assert checked.exit_code == 0, checked.output
    assert "every figure equals the one recomputed" in checked.output
    assert "is a valid submission" in checked.output


def test_one_domain_is_a_submission_too(tmp_path, fake_runs):  # noqa: F811
    result = prepare(fake_runs["retail"], "-o", tmp_path, "--model-name", "Fake")
    assert result.exit_code == 0, result.output
    submission = json.loads((_folder(tmp_path) / "submission.json").read_text())
    assert list(submission["results"]) == ["retail"]


def _broken(tmp_path: Path, runs: list[Path], *options: str) -> list[str]:
    result = prepare(*runs, "-o", tmp_path / "out", *options)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    return _errors(result)


def test_mock_is_not_on_the_board(tmp_path, fake_runs):  # noqa: F811
    (error,) = _broken(tmp_path, [fake_runs["mock"], fake_runs["airline"]])
    assert (
        error.startswith("error: [board-domain]")
        and "'mock', which the board does not rank" in error
    )


def test_one_run_per_domain(tmp_path, fake_runs):  # noqa: F811
    (error,) = _broken(tmp_path, [fake_runs["airline"], fake_runs["airline"]])
    assert "[one-per-domain] 2 runs of airline were given" in error


def test_same_agent_and_user_simulator_with_the_same_arguments(tmp_path, fake_runs):  # noqa: F811
    def hotter(document):
        document["info"]["user_info"]["llm_args"]["temperature"] = 0.7

    telecom = edited_copy(fake_runs["telecom"], tmp_path / "telecom.json", hotter)
    (error,) = _broken(tmp_path, [fake_runs["airline"], telecom])
    assert "[same-models] the user simulator differs between airline and telecom" in error
    assert "llm_args" in error and "0.7" in error


def test_banking_needs_its_retrieval_config(tmp_path, fake_runs):  # noqa: F811
    def banking(document):
        document["info"]["environment_info"]["domain_name"] = "banking_knowledge"

    run = edited_copy(fake_runs["retail"], tmp_path / "banking.json", banking)
    (error,) = _broken(tmp_path, [run], "--no-verify")
    assert "[retrieval-config]" in error and "--retrieval-config" in error
    # given on the command line (or recorded by the run) it goes into the results
    result = prepare(run, "-o", tmp_path / "ok", "--no-verify", "--retrieval-config", "bm25_grep")
    assert result.exit_code == 0, result.output
    submission = json.loads((_folder(tmp_path / "ok") / "submission.json").read_text())
    assert submission["results"]["banking_knowledge"]["retrieval_config"] == "bm25_grep"


def test_no_api_key_in_shared_files(tmp_path, fake_runs):  # noqa: F811
    def keyed(document):
        document["info"]["agent_info"]["llm_args"]["api_key"] = "sk-secret"

    run = edited_copy(fake_runs["airline"], tmp_path / "airline.json", keyed)
    (error,) = _broken(tmp_path, [run])
    assert "[no-secrets]" in error and "api_key" in error and "sk-secret" not in error


def test_every_task_of_the_base_split(tmp_path, fake_server):  # noqa: F811
    run = fake_run(
        fake_server, "airline", tmp_path / "a.json", "--num-trials", "4", "--num-tasks", "3"
    )
    (error,) = _broken(tmp_path, [run])
    assert "[base-split]" in error and "47 missing" in error


def test_changed_task_definitions_are_caught(tmp_path, fake_runs):  # noqa: F811
    def edited(document):
        document["tasks"][0]["user_scenario"]["instructions"]["reason_for_call"] = "other"

    run = edited_copy(fake_runs["airline"], tmp_path / "a.json", edited)
    (error,) = _broken(tmp_path, [run])
    assert "[base-split]" in error and "1 task definition(s) differ" in error


def test_every_task_run_num_trials_times(tmp_path, fake_runs):  # noqa: F811
    def lost(document):
        document["simulations"].pop()

    run = edited_copy(fake_runs["airline"], tmp_path / "a.json", lost)
    (error,) = _broken(tmp_path, [run])
    assert "[trial-count] " in error and "do not have 4 simulations" in error


def test_at_least_four_trials_and_no_verify_skips_it(tmp_path, fake_server):  # noqa: F811
    run = fake_run(fake_server, "airline", tmp_path / "a.json", "--num-trials", "2")
    (error,) = _broken(tmp_path, [run])
    assert "[min-trials]" in error and "at least 4" in error
    result = prepare(run, "-o", tmp_path / "ok", "--no-verify")
    assert result.exit_code == 0, result.output
    submission = json.loads((_folder(tmp_path / "ok") / "submission.json").read_text())
    assert set(submission["results"]["airline"]) == {"pass_1", "pass_2", "cost"}


def test_no_infrastructure_errors(tmp_path, fake_runs):  # noqa: F811
    def failed(document):
        document["simulations"][0]["termination_reason"] = "infrastructure_error"

    run = edited_copy(fake_runs["airline"], tmp_path / "a.json", failed)
    (error,) = _broken(tmp_path, [run])
    assert "[no-infra-errors] " in error and "1 simulation(s)" in error


def test_an_unfinished_run_is_refused(tmp_path, fake_runs):  # noqa: F811
    run = tmp_path / "a.json"
    shutil.copy(fake_runs["airline"], run)
    (tmp_path / "a.json.journal.jsonl").write_text("")
    result = prepare(run, "-o", tmp_path / "out")
    assert result.exit_code == 1 and "unfinished run" in result.output


def test_metadata_from_a_toml_file_options_win(tmp_path, fake_runs):  # noqa: F811
    meta = tmp_path / "meta.toml"
    meta.write_text(
        'model_name = "Fake Model 1"\nmodel_organization = "Fake Labs"\n'
        'email = "a@example.com"\nis_new = false\nevaluation_date = 2026-01-15\n'
        'release_date = 2025-12-01\nannouncement_url = "https://example.com/fake"\n'
        '[[references]]\ntitle = "Paper"\nurl = "https://example.com/p"\ntype = "paper"\n'
    )
    result = prepare(
        *_board(fake_runs), "-o", tmp_path / "out", "--metadata", meta,
        "--model-organization", "Other Labs", "--submission-date", "2026-02-02",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    folder = _folder(tmp_path / "out")
    assert folder.name == "fake-model-1_other-labs_2026-02-02"
    submission = json.loads((folder / "submission.json").read_text())
    assert submission["model_organization"] == "Other Labs"
    assert submission["contact_info"] == {"email": "a@example.com"}
    assert submission["is_new"] is False
    assert submission["methodology"]["evaluation_date"] == "2026-01-15"
    assert submission["model_release"] == {
        "release_date": "2025-12-01",
        "announcement_url": "https://example.com/fake",
    }
    assert submission["references"] == [
        {"title": "Paper", "url": "https://example.com/p", "type": "paper"}
    ]
    # the board's validator warns when the name is not the runs' model; so does ours
    checked = invoke("submit", "validate", folder, "--data-dir", DATA_DIR)
    assert checked.exit_code == 0 and "model_name 'Fake Model 1' is not" in checked.output


def test_bad_metadata_is_one_sentence(tmp_path, fake_runs):  # noqa: F811
    meta = tmp_path / "meta.toml"
    meta.write_text('model_nam = "typo"\n')
    result = prepare(fake_runs["airline"], "-o", tmp_path / "out", "--metadata", meta)
    assert result.exit_code == 1 and "unknown key(s) model_nam" in result.output
    result = prepare(fake_runs["airline"], "-o", tmp_path / "out", "--submission-type", "odd")
    assert result.exit_code == 1 and "is not one of standard, custom" in result.output
    result = prepare(fake_runs["airline"], "-o", tmp_path / "out", "--evaluation-date", "May 1")
    assert result.exit_code == 1 and "is not a date" in result.output


def test_interactive_prompts_take_typed_answers(tmp_path, fake_runs):  # noqa: F811
    answers = ["", "", "Typed Org", "", "me@example.com", "", "", "n", "custom"]
    answers += ["high", "", "", "", "y", "n", ""]
    result = prepare(
        fake_runs["airline"], "-o", tmp_path, "--interactive", input="\n".join(answers) + "\n"
    )
    assert result.exit_code == 0, result.output
    submission = json.loads((_folder(tmp_path) / "submission.json").read_text())
    assert submission["model_organization"] == "Typed Org"
    assert submission["submitting_organization"] == "Typed Org"
    assert submission["contact_info"] == {"email": "me@example.com"}
    assert submission["is_new"] is False and submission["submission_type"] == "custom"
    assert submission["reasoning_effort"] == "high"
    assert submission["methodology"]["verification"]["modified_prompts"] is True


def test_an_existing_folder_is_kept_unless_forced(tmp_path, fake_runs):  # noqa: F811
    args = (fake_runs["airline"], "-o", tmp_path, "--submission-date", "2026-03-03")
    assert prepare(*args).exit_code == 0
    again = prepare(*args)
    assert again.exit_code == 1 and "already exists" in again.output
    assert prepare(*args, "--force").exit_code == 0


def test_a_results_folder_becomes_one_trajectory_file(tmp_path, fake_runs):  # noqa: F811
    folder = tmp_path / "airline-dir"
    converted = invoke("convert-results", fake_runs["airline"], "--to", "dir", "-o", folder)
    assert converted.exit_code == 0, converted.output
    result = prepare(folder, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    written = _folder(tmp_path / "out") / "trajectories" / "airline_results.json"
    original = json.loads(fake_runs["airline"].read_text())
    assert json.loads(written.read_text())["simulations"] == original["simulations"]


# --- validate ---------------------------------------------------------------------------------


@pytest.fixture
def good_folder(tmp_path, fake_runs) -> Path:  # noqa: F811
    assert prepare(*_board(fake_runs), "-o", tmp_path / "out").exit_code == 0
    return _folder(tmp_path / "out")


def _validate_errors(folder: Path) -> list[str]:
    result = invoke("submit", "validate", folder, "--data-dir", DATA_DIR)
    assert result.exit_code == 1, result.output
    return [line for line in result.output.splitlines() if line.startswith("error:")]


def _edit_submission(folder: Path, edit) -> None:
    path = folder / "submission.json"
    submission = json.loads(path.read_text())
    edit(submission)
    path.write_text(json.dumps(submission, indent=2))


def test_validate_finds_a_figure_off_by_its_last_bit(good_folder):
    def nudge(submission):
        value = submission["results"]["retail"]["pass_2"]
        submission["results"]["retail"]["pass_2"] = math.nextafter(value, math.inf)

    _edit_submission(good_folder, nudge)
    errors = _validate_errors(good_folder)
    assert any("retail pass_2 is" in e and "the trajectories give" in e for e in errors)


def test_validate_reports_schema_problems_by_place(good_folder):
    def spoil(submission):
        submission["results"]["airline"]["pass_1"] = 150
        submission["submission_date"] = "yesterday"
        submission["contact_info"]["phone"] = "123"
        del submission["model_organization"]

    _edit_submission(good_folder, spoil)
    errors = "\n".join(_validate_errors(good_folder))
    assert "at results/airline/pass_1" in errors and "maximum of 100" in errors
    assert "at submission_date" in errors and "'date'" in errors
    assert "at contact_info" in errors and "'phone'" in errors
    assert "'model_organization' is a required property" in errors


def test_validate_checks_the_trajectories_against_the_rules(good_folder):
    path = good_folder / "trajectories" / "airline_results.json"
    document = json.loads(path.read_text())
    document["simulations"] = document["simulations"][:-1]
    path.write_text(json.dumps(document))
    errors = _validate_errors(good_folder)
    assert any("[trial-count]" in e for e in errors)


def test_validate_a_missing_trajectory_file_and_a_missing_folder(good_folder, tmp_path):
    (good_folder / "trajectories" / "telecom_results.json").unlink()
    errors = _validate_errors(good_folder)
    assert any("names telecom_results.json for telecom" in e for e in errors)
    missing = invoke("submit", "validate", tmp_path / "nowhere", "--data-dir", DATA_DIR)
    assert missing.exit_code == 1 and "is not a folder" in missing.output


def test_validate_a_published_submission_without_trajectories():
    folder = DATA_DIR / "tau2" / "leaderboard" / "submissions" / "gpt-4-1_openai_2024-06-20"
    result = invoke("submit", "validate", folder, "--data-dir", DATA_DIR)
    assert result.exit_code == 0, result.output
    assert "matches the board's schema" in result.output
    assert "figures cannot be recomputed" in result.output


# --- against the reference --------------------------------------------------------------------

FIXTURE_ANSWERS = (
    "--model-organization", "Conformance Org", "--email", "conformance@example.com",
    "--contact-name", "Conformance Fixture", "--not-new", "--evaluation-date", "2026-01-15",
    "--notes", "Recorded with a scripted fake model (tau-mcp conformance fixture).",
)  # fmt: skip


@needs_fixture
def test_the_reference_submission_byte_for_byte(tmp_path, reference_runs):  # noqa: F811
    """The reference's three runs and the answers it was given: the same submission.json."""
    expected = LEADERBOARD_DIR / "submission.json"
    day = json.loads(expected.read_text())["submission_date"]
    runs = [reference_runs[d] for d in BOARD_DOMAINS]
    result = prepare(*runs, "-o", tmp_path, *FIXTURE_ANSWERS, "--submission-date", day)
    assert result.exit_code == 0, result.output
    folder = _folder(tmp_path)
    assert folder.name == f"openai-fake_conformance-org_{day}"
    assert (folder / "submission.json").read_bytes() == expected.read_bytes()
    listing = json.loads((LEADERBOARD_DIR / "trajectories_listing.json").read_text())
    got = sorted((p.name, p.stat().st_size) for p in (folder / "trajectories").iterdir())
    assert got == sorted((f["name"], f["size"]) for f in listing)


@pytest.mark.e2e  # runs the reference in its own Python
def test_the_reference_validator_accepts_our_folder(good_folder):
    python = reference_python()
    done = run_reference(python, "submit", "validate", str(good_folder), cwd=good_folder.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Submission validation successful!" in done.stdout, done.stdout
    assert "Submission metrics validation successful!" in done.stdout, done.stdout
    assert "warning" not in done.stdout.lower()


# --- issue 31 item 7: prepare and validate agree; placeholder metadata warned; redacted keys ------


def test_validate_takes_the_folder_prepare_was_given(tmp_path, fake_runs):  # noqa: F811
    out = tmp_path / "out"
    made = prepare(*_board(fake_runs), "-o", out)
    assert made.exit_code == 0, made.output
    checked = invoke("submit", "validate", out, "--data-dir", DATA_DIR)
    assert checked.exit_code == 0, checked.output
    assert f"validating {_folder(out)}" in checked.output.replace("\n", "")
    assert "is a valid submission" in checked.output
    # two submission folders under one -o: which one is meant is asked, in one sentence
    shutil.copytree(_folder(out), out / "other_submission")
    both = invoke("submit", "validate", out, "--data-dir", DATA_DIR)
    assert both.exit_code == 1
    assert "holds 2 submission folders" in both.output and "name one of them" in both.output


def test_prepare_warns_about_placeholder_metadata(tmp_path, fake_runs):  # noqa: F811
    placeholder = prepare(fake_runs["retail"], "-o", tmp_path / "a")
    assert placeholder.exit_code == 0, placeholder.output
    warnings = [line for line in placeholder.output.splitlines() if line.startswith("warning:")]
    assert any("My-Organization" in w and "--model-organization" in w for w in warnings), warnings
    assert any("no contact" in w and "--email" in w for w in warnings), warnings
    checked = invoke("submit", "validate", _folder(tmp_path / "a"), "--data-dir", DATA_DIR)
    assert checked.exit_code == 0 and "My-Organization" in checked.output
    named = prepare(
        fake_runs["retail"], "-o", tmp_path / "b",
        "--model-organization", "Acme", "--email", "eval@acme.example",
    )  # fmt: skip
    assert named.exit_code == 0, named.output
    assert "warning:" not in named.output


def test_a_results_file_with_redacted_keys_is_accepted(tmp_path, fake_runs):  # noqa: F811
    """tau-mcp writes `[redacted]` where a key was: nothing secret is left to share."""

    def redacted(document):
        document["info"]["agent_info"]["llm_args"]["api_key"] = "[redacted]"
        document["info"]["user_info"]["llm_args"]["api_key"] = "[redacted]"

    run = edited_copy(fake_runs["airline"], tmp_path / "airline.json", redacted)
    result = prepare(run, "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "no-secrets" not in result.output
