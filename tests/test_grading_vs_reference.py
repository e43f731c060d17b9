"""Our re-grading gives every trajectory the reward (and reward components) the reference's
grader gave it.

`tests/fixtures/reference_grading.json` holds oracle trajectories of all four domains and
perturbed copies of them (dropped, changed, repeated and extra writes, hallucinated tools,
other endings, missing or re-cased communicated information, user-side changes in telecom),
each with the reward_info the reference tau2-bench v1.0.1 grader computed for it. NL
assertions were judged by a stub that finds every assertion met; the test uses the same stub.
See scripts/make_grading_fixture.py and docs/harness.md ("Differences from the reference").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tau_mcp.grading import Grader
from tau_mcp.harness.evaluate import regrade
from tests.support.engine_backend import EngineBackend
from tests.support.harness import load
from tests.support.verdicts import comparable

pytestmark = pytest.mark.needs_data

FIXTURE = Path(__file__).parent / "fixtures" / "reference_grading.json"
DOMAINS = ("mock", "airline", "retail", "telecom")


class AllMetJudge:
    """The stub judge the fixture was graded with on the reference side."""

    model = "stub"

    async def judge(self, messages, statements):
        return [{"nl_assertion": s, "met": True, "justification": "stub"} for s in statements], 0.0


@pytest.fixture(scope="module")
def cases() -> dict[str, list[dict[str, Any]]]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["domains"]


def test_the_fixture_covers_every_domain_and_component(cases):
    assert set(cases) == set(DOMAINS)
    assert 60 <= sum(len(v) for v in cases.values()) <= 400
    refs = [c["reference"] for v in cases.values() for c in v]
    assert {r["reward"] for r in refs} == {0.0, 1.0}
    for field in ("db_check", "env_assertions", "action_checks", "communicate_checks"):
        values = [r[field] for r in refs if r[field]]
        assert values, field
    assert any(r["db_check"] and not r["db_check"]["db_match"] for r in refs)
    assert any(r["reward_basis"] is None for r in refs)  # premature endings
    labels = {c["id"].rsplit(":", 1)[1] for v in cases.values() for c in v}
    assert {"base", "drop_write", "change_arg", "hallucinated_tool", "end_max_steps"} <= labels


@pytest.mark.parametrize("domain", DOMAINS)
async def test_regrading_matches_the_reference(cases, domain):
    loaded = load(domain)
    backend = EngineBackend({domain: loaded})
    grader = Grader(backend, loaded, AllMetJudge())
    sims = [
        {
            "id": c["id"],
            "task_id": c["task_id"],
            "trial": 0,
            "termination_reason": c["termination_reason"],
            "messages": c["messages"],
        }
        for c in cases[domain]
    ]
    graded = await regrade(backend, loaded, grader, {"info": None, "simulations": sims})
    ours = {s["id"]: comparable(s["reward_info"]) for s in graded["simulations"]}
    mismatches = [
        (c["id"], field, c["reference"][field], ours[c["id"]][field])
        for c in cases[domain]
        for field in c["reference"]
        if c["reference"][field] != ours[c["id"]][field]
    ]
    assert not mismatches, json.dumps(mismatches[:5], indent=1, default=str)
