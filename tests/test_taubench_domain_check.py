"""`tau-harness domain check` on the τ-bench domains, by their registered names.

What it finds is the original's own data: gold actions that fail (and the ids they pass that
no record holds), and tasks a do-nothing agent passes; so it exits 1, as it does on tau2's own
airline and retail. The oracle reaches its gold on every task of every split, the tools' listing
is valid, and replays are deterministic."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from tau_mcp.harness.cli import app
from tests.support import taubench as tb

pytestmark = pytest.mark.needs_data("taubench")

#: What the check finds in the original's data: errors by check.
EXPECTED = {
    "tau-bench-airline": {"inaction": 19},
    "tau-bench-retail": {"gold-action": 44, "id-refs": 7, "inaction": 13},
}
#: Tasks of every split: retail test, train and dev; airline test.
TASKS = {"tau-bench-airline": 50, "tau-bench-retail": 635}


def test_the_domains_are_listed_and_shown() -> None:
    shown = CliRunner().invoke(app, ["domains"], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "tau-bench-retail" in shown.output and "tau-bench-airline" in shown.output
    about = CliRunner().invoke(
        app, ["domain", "tau-bench-airline", "--no-policy"], env={"COLUMNS": "200"}
    )
    assert about.exit_code == 0, about.output
    assert "50 tasks; splits: test" in about.output and "book_reservation(" in about.output
    assert str(tb.TAUBENCH_DIR / "taubench" / "domains" / "airline") in about.output.replace(
        "\n", ""
    )


@pytest.mark.parametrize("name", list(EXPECTED))
def test_domain_check_finds_only_the_originals_own_defects(name: str) -> None:
    result = CliRunner().invoke(app, ["domain", "check", name, "--format", "json"])
    assert result.exit_code == 1, result.output  # the original's defects are errors
    report = json.loads(result.stdout)
    assert report["domain"] == name and report["counts"]["tasks"] == TASKS[name]
    assert report["counts"]["oracle simulations"] == TASKS[name]
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    found = Counter(f["check"] for f in errors)
    assert dict(found) == EXPECTED[name], [f["message"] for f in errors][:5]
    inactive = {f["task"] for f in errors if f["check"] == "inaction"}
    if name == "tau-bench-airline":
        assert {"test_21", "test_24", "test_49"} <= inactive  # no gold actions at all
    warnings = [f for f in report["findings"] if f["severity"] == "warning"]
    assert not [f for f in warnings if f["check"] == "reward-basis"]
