"""`tau-harness domain new` and `tau-harness domains`, in-process: the pack it writes passes
`domain check` and scores 1.0 with the oracle (found through --domain-path); bad names and
folders are one sentence with nothing written."""

from __future__ import annotations

import itertools
import json
import os

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tau_mcp.harness.cli.domain import RESERVED_NAMES
from tau_mcp.harness.scaffold.pack import PackNames, template_files
from tau_mcp.servers.domains import discovery
from tests.support.data import DEMO_DIR

cli = CliRunner()
_numbers = itertools.count(1)


def unique() -> str:
    return f"desk{os.getpid()}n{next(_numbers)}"


def invoke(*args: object):
    # `--domain-path` sets $TAU_DOMAIN_PATH for the process: restored after each command.
    env = {"COLUMNS": "200", discovery.PATH_ENV: None}
    return cli.invoke(app, [str(a) for a in args], env=env)


EXPECTED_FILES = [
    "README.md",
    "pyproject.toml",
    "src/{m}/__init__.py",
    "src/{m}/agent_tools.py",
    "src/{m}/data/db.json",
    "src/{m}/data/policy.md",
    "src/{m}/data/tasks.json",
    "src/{m}/data/user_db.json",
    "src/{m}/models.py",
    "src/{m}/user_tools.py",
    "tests/test_domain.py",
]


def test_a_new_pack_checks_clean_and_scores_one(tmp_path):
    name = unique()
    folder = tmp_path / "my-pack"
    made = invoke("domain", "new", name, "--dir", folder)
    assert made.exit_code == 0, made.output
    module = PackNames(name).module
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert files == sorted(f.format(m=module) for f in EXPECTED_FILES)
    assert f"pip install -e {folder}" in made.output
    pyproject = (folder / "pyproject.toml").read_text()
    assert f'[project.entry-points."tau_mcp.domains"]\n{name} = "{module}:SPEC"' in pyproject
    assert "{{" not in "".join(p.read_text() for p in folder.rglob("*") if p.is_file())
    tasks = json.loads((folder / "src" / module / "data" / "tasks.json").read_text())
    kinds = [
        {a.get("requestor", "assistant") for a in t["evaluation_criteria"]["actions"]}
        for t in tasks
    ]
    assert len(tasks) == 3 and {"user", "assistant"} in kinds

    checked = invoke("domain", "check", name, "--domain-path", folder, "--format", "json")
    assert checked.exit_code == 0, checked.output
    report = json.loads(checked.stdout)
    assert (report["errors"], report["warnings"], report["counts"]["tasks"]) == (0, 0, 3)

    results = tmp_path / "oracle.json"
    ran = invoke(
        "run", "--domain", name, "--agent", "oracle", "--user", "scripted",
        "--domain-path", folder, "--save-to", results,
    )  # fmt: skip
    assert ran.exit_code == 0, ran.output
    rewards = [s["reward_info"]["reward"] for s in json.loads(results.read_text())["simulations"]]
    assert rewards == [1.0, 1.0, 1.0]
    shown = invoke("report", results, "-o", tmp_path / "report.md", "--format", "md")
    assert shown.exit_code == 0, shown.output
    report = (tmp_path / "report.md").read_text()
    assert f"Domain {name};" in report and "| oracle (oracle) | 100.0 |" in report


@pytest.mark.parametrize("reserved", sorted(RESERVED_NAMES))
def test_reserved_names_are_refused(tmp_path, reserved):
    result = invoke("domain", "new", reserved, "--dir", tmp_path / "x")
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: '{reserved}' is reserved for `tau-harness domain {reserved}`"
    )
    assert not (tmp_path / "x").exists()


def test_the_reserved_words_are_the_registrys():
    assert RESERVED_NAMES == discovery.RESERVED_NAMES


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("9lives", "'9lives' is not a domain name"),
        ("has space", "'has space' is not a domain name"),
        ("dots.in.it", "'dots.in.it' is not a domain name"),
        ("mock", "a domain named 'mock' exists already (domain 'mock' of tau-mcp)"),
    ],
)
def test_bad_or_taken_names_are_one_sentence(tmp_path, name, message):
    result = invoke("domain", "new", name, "--dir", tmp_path / "x")
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), result.output
    assert not (tmp_path / "x").exists()


def test_an_existing_folder_must_be_empty(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    result = invoke("domain", "new", unique(), "--dir", full)
    assert result.exit_code == 1
    assert result.output.strip() == (
        f"error: {full} exists and is not empty; give --dir a new or empty folder"
    )
    assert [p.name for p in full.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert invoke("domain", "new", unique(), "--dir", empty).exit_code == 0
    assert (empty / "pyproject.toml").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "full"]  # nothing staged left


def test_the_default_folder_is_the_name_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name = unique()
    assert invoke("domain", "new", name).exit_code == 0
    assert (tmp_path / name / "pyproject.toml").is_file()


def test_the_template_ships_as_package_data():
    names = {p.name for p in template_files()}
    assert {"pyproject.toml.tmpl", "tasks.json.tmpl", "agent_tools.py.tmpl"} <= names


def test_domains_lists_ours_and_packs_and_says_what_is_broken(tmp_path):
    good, broken = tmp_path / "good", tmp_path / "broken"
    good_name, broken_name = unique(), unique()
    assert invoke("domain", "new", good_name, "--dir", good).exit_code == 0
    assert invoke("domain", "new", broken_name, "--dir", broken).exit_code == 0
    listed = invoke("domains", "--domain-path", good, "--data-dir", DEMO_DIR, "--format", "json")
    assert listed.exit_code == 0, listed.output
    rows = {row["name"]: row for row in json.loads(listed.stdout)["domains"]}
    assert rows[good_name]["from"] == f"the pack folder {good}" and not rows[good_name]["builtin"]
    assert rows["mock"]["builtin"] and rows["mock"]["data"].endswith("mock")
    init = broken / "src" / PackNames(broken_name).module / "__init__.py"
    init.write_text("raise RuntimeError('half written')\n")
    table = invoke("domains", "--domain-path", good, "--domain-path", broken)
    assert table.exit_code == 1
    assert good_name in table.stdout and broken_name in table.stdout and "mock" in table.stdout
    assert table.stderr.strip() == (
        f"error: domain '{broken_name}' of the pack folder {broken} fails to load: "
        "RuntimeError: half written"
    )


def test_every_command_takes_domain_path(tmp_path):
    for command in (["run"], ["serve"], ["play"], ["evaluate"], ["view"], ["report"],
                    ["review"], ["domain", "show"], ["domain", "check"], ["export", "ep-rows"],
                    ["submit", "prepare"], ["leaderboard"], ["domains"]):  # fmt: skip
        shown = invoke(*command, "--help")
        assert "--domain-path" in shown.output, command
    missing = invoke("run", "--domain", "mock", "--domain-path", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "does not exist" in missing.output
