"""`domain check` on the τ-bench domains, through the checker's Python API (they are not in the
registry until domain packs register them; `tau-harness domain check NAME` then runs the same).

What it finds is the original's own data: gold actions that fail (and the ids they pass that
no record holds), and tasks a do-nothing agent passes. The oracle reaches its gold on every task
of every split, the tools' listing is valid, and replays are deterministic."""

from __future__ import annotations

from collections import Counter

import pytest

from tau_mcp.harness.domain_check.checker import check_domain
from tests.support import taubench as tb

pytestmark = pytest.mark.needs_data("taubench")

#: What the check finds in the original's data: errors by check.
EXPECTED = {
    "tau-bench-airline": {"inaction": 19},
    "tau-bench-retail": {"gold-action": 44, "id-refs": 7, "inaction": 13},
}


@pytest.mark.parametrize("name", list(EXPECTED))
async def test_domain_check_finds_only_the_originals_own_defects(name: str) -> None:
    report = await check_domain(tb.build_domains()[name])
    found = Counter(f.check for f in report.errors)
    assert dict(found) == EXPECTED[name], [f.message for f in report.errors][:5]
    inactive = {f.task for f in report.errors if f.check == "inaction"}
    if name == "tau-bench-airline":
        assert {"test_21", "test_24", "test_49"} <= inactive  # no gold actions at all
    assert not [f for f in report.warnings if f.check == "reward-basis"]
