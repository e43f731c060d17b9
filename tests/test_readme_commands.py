"""The README's two commands are the ones CI runs: `.ci/run` holds each as a line of its own,
word for word, so the README cannot drift from what passes."""

from __future__ import annotations

import re

from tests.support.data import ROOT


def readme_commands() -> list[str]:
    """The indented command lines of the README's "The two commands" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## The two commands", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if re.match(r"^ {4}\S", line)]


def test_ci_runs_the_readme_commands_as_written():
    commands = readme_commands()
    assert len(commands) == 2, commands
    install_and_run, tests = commands
    assert "tau-harness run" in install_and_run and "pytest" in tests
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    for command in commands:
        assert command in ci_lines, f".ci/run does not run the README's `{command}` as written"


def test_ci_does_not_set_the_data_folder_behind_the_readme_s_back():
    """The test command names its data folder itself (relative, as written); CI exports none
    that could make it pass where the README's own line would not."""
    script = (ROOT / ".ci" / "run").read_text()
    assert not re.search(r"^\s*export\s+TAU2_DATA_DIR", script, re.M)
