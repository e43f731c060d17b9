"""`tau-harness evaluate` on results files written by the reference's own runner.

`tests/fixtures/reference_results_fakellm.json` holds results files that tau2-bench v1.0.1's
runner wrote when its agent, user simulator and NL judge talked to a scripted OpenAI-compatible
server: gold actions, a changed argument, a dropped write, an early stop, parallel tool calls,
hallucinated tool calls and too many errors, in normal and solo mode, plus runs cut by
max_steps. Data-folder text is stripped (no tasks, policies or guidelines; user messages and
tool outputs elided), which grading never reads. Every simulation must get the reward and the
reward components the reference recorded. The NL verdicts are replayed from the recording by a
stub judge, as the reference's judge was scripted too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tau_mcp.grading import Grader
from tau_mcp.harness.cli import app
from tau_mcp.harness.evaluate import is_solo_run, regrade
from tau_mcp.harness.results import load_results
from tests.support.data import DATA_DIR
from tests.support.engine_backend import EngineBackend
from tests.support.harness import load
from tests.support.verdicts import comparable

pytestmark = pytest.mark.needs_data

FIXTURE = Path(__file__).parent / "fixtures" / "reference_results_fakellm.json"


def _runs() -> list[dict[str, Any]]:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))["runs"]


RUNS = _runs()


def _agent_texts(messages: list[Any]) -> tuple[str, ...]:
    texts = []
    for m in messages:
        role = m["role"] if isinstance(m, dict) else m.role
        content = m.get("content") if isinstance(m, dict) else m.content
        if role == "assistant" and content:
            texts.append(content)
    return tuple(texts)


class RecordedJudge:
    """Gives the verdicts the reference's (scripted) judge gave, found by the agent's lines."""

    model = "recorded"

    def __init__(self, simulations: list[dict[str, Any]]) -> None:
        self.verdicts = {
            _agent_texts(s["messages"]): [c["met"] for c in s["reward_info"]["nl_assertions"]]
            for s in simulations
            if s["reward_info"] and s["reward_info"].get("nl_assertions")
        }

    async def judge(self, messages, statements):
        met = self.verdicts[_agent_texts(messages)]
        return [
            {"nl_assertion": s, "met": m, "justification": "recorded"}
            for s, m in zip(statements, met, strict=True)
        ], 0.0


def _normalised(reward_info: dict[str, Any] | None) -> dict[str, Any] | None:
    """comparable(), with each gold action's free-text note left out (the fixture drops it)."""
    out = comparable(reward_info)
    if out and out["action_checks"]:
        for row in out["action_checks"]:
            row["action"] = {k: v for k, v in row["action"].items() if k != "info"}
    return out


def _mismatches(reference: list[dict], ours: list[dict]) -> list[tuple]:
    graded = {s["id"]: s for s in ours}
    found = []
    for sim in reference:
        want, got = _normalised(sim["reward_info"]), _normalised(graded[sim["id"]]["reward_info"])
        if want != got:
            fields = [
                f for f in want or {"reward_info": 1} if (want or {}).get(f) != (got or {}).get(f)
            ]
            found.append((sim["task_id"], sim["trial"], sim["termination_reason"], fields))
    return found


def test_the_fixture_covers_modes_endings_and_outcomes():
    assert FIXTURE.stat().st_size < 500_000
    assert {r["domain"] for r in RUNS} == {"mock", "airline", "retail", "telecom"}
    solo = {r["domain"] for r in RUNS if is_solo_run(r["results"])}
    assert solo == {"mock", "telecom"}
    sims = [s for r in RUNS for s in r["results"]["simulations"]]
    assert {s["termination_reason"] for s in sims} == {
        "user_stop",
        "agent_stop",
        "too_many_errors",
        "max_steps",
        "infrastructure_error",
    }
    rewards = {s["reward_info"]["reward"] for s in sims if s["reward_info"]}
    assert rewards == {0.0, 1.0}
    nl = [
        c["met"] for s in sims if s["reward_info"] for c in s["reward_info"]["nl_assertions"] or []
    ]
    assert True in nl and False in nl
    for run in RUNS:
        document = run["results"]
        assert document["tasks"] == []
        assert set(document["info"]["environment_info"]) == {"domain_name"}
        assert "global_simulation_guidelines" not in document["info"]["user_info"]


@pytest.mark.parametrize("run", RUNS, ids=[r["name"] for r in RUNS])
async def test_regrading_a_reference_results_file_gives_its_rewards(tmp_path, run):
    path = tmp_path / "results.json"
    path.write_text(json.dumps(run["results"]), encoding="utf-8")
    document = load_results(path)
    domain = load(run["domain"])
    backend = EngineBackend({run["domain"]: domain})
    grader = Grader(backend, domain, RecordedJudge(document["simulations"]))
    graded = await regrade(backend, domain, grader, document)
    assert not _mismatches(document["simulations"], graded["simulations"])


@pytest.mark.parametrize("name", ["telecom_solo", "airline"])
def test_the_cli_regrades_and_views_a_reference_results_file(tmp_path, name):
    (run,) = [r for r in RUNS if r["name"] == name]
    source, regraded = tmp_path / "reference.json", tmp_path / "regraded.json"
    source.write_text(json.dumps(run["results"]), encoding="utf-8")
    cli = CliRunner()
    result = cli.invoke(
        app,
        [
            "evaluate",
            "--domain",
            run["domain"],
            "--input",
            str(source),
            "--save-to",
            str(regraded),
            "--judge-llm",
            "none",  # NL assertions are not in these domains' reward basis
            "--data-dir",
            str(DATA_DIR),
        ],
    )
    assert result.exit_code == 0, result.output
    ours = json.loads(regraded.read_text(encoding="utf-8"))["simulations"]
    assert not _mismatches(run["results"]["simulations"], ours)

    result = cli.invoke(app, ["view", str(source)])
    assert result.exit_code == 0, result.output
    assert "pass^1" in result.output
