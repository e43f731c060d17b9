"""pass^k and cost as the board recomputes them: bit for bit on the reference's own submission,
the rules of the computation on small documents, and (with $TAU_REFERENCE_PYTHON) the
reference's `compute_metrics` on the same documents."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from tau_mcp.harness.leaderboard.metrics import domain_scores, gold_action_count, mean_order
from tests.support.leaderboard import (
    BOARD_DOMAINS,
    LEADERBOARD_DIR,
    needs_fixture,
    reference_python,
    reference_runs,  # noqa: F401 - fixture
)


@needs_fixture
def test_fixture_runs_give_the_reference_submission_bit_for_bit(reference_runs):  # noqa: F811
    submitted = json.loads((LEADERBOARD_DIR / "submission.json").read_text())["results"]
    for domain in BOARD_DOMAINS:
        scores = domain_scores(json.loads(reference_runs[domain].read_text()))
        for k in (1, 2, 3, 4):
            # `!=` on floats, as the board's validator compares: equal bits, not close values
            assert scores.percent(k) == submitted[domain][f"pass_{k}"], (domain, k)
            assert scores.percent(k).hex() == float(submitted[domain][f"pass_{k}"]).hex()
        assert scores.cost == submitted[domain]["cost"]


@needs_fixture
def test_task_order_and_per_task_counts_match_the_recorded_detail(reference_runs):  # noqa: F811
    detail = json.loads((LEADERBOARD_DIR / "metrics_detail.json").read_text())["domains"]
    for domain in BOARD_DOMAINS:
        document = json.loads(reference_runs[domain].read_text())
        tasks = {t["id"]: t for t in document["tasks"]}
        recorded = detail[domain]["tasks_in_mean_order"]
        ids = sorted(t["task_id"] for t in recorded)
        order = mean_order(ids, tasks)
        counts = {t["task_id"]: t["num_actions"] for t in recorded}
        assert [counts[t] for t in order] == sorted(counts.values())
        assert {t: gold_action_count(tasks[t]) for t in ids} == counts
        scores = domain_scores(document)
        for k in (1, 2, 3, 4):
            assert scores.pass_hat[k] == detail[domain]["pass_hat_k"][f"pass^{k}"]


@needs_fixture
def test_a_plain_sum_would_miss_the_last_bit(reference_runs):  # noqa: F811
    """Why the order and numpy's pairwise sum matter: retail pass^2 by a sequential sum is off."""
    detail = json.loads((LEADERBOARD_DIR / "metrics_detail.json").read_text())["domains"]
    tasks = detail["retail"]["tasks_in_mean_order"]
    plain = sum(math.comb(t["successes"], 2) / math.comb(t["trials"], 2) for t in tasks)
    assert plain / len(tasks) != detail["retail"]["pass_hat_k"]["pass^2"]
    ours = domain_scores(json.loads(reference_runs["retail"].read_text())).pass_hat[2]
    assert ours == detail["retail"]["pass_hat_k"]["pass^2"]


def _task(task_id: str, actions: list[dict]) -> dict:
    return {"id": task_id, "evaluation_criteria": {"actions": actions}}


def _sim(task_id: str, trial: int, reward: float, **extra) -> dict:
    return {
        "id": f"{task_id}-{trial}",
        "task_id": task_id,
        "trial": trial,
        "reward_info": {"reward": reward},
        "termination_reason": "user_stop",
        **extra,
    }


def _document(sims: list[dict], tasks: list[dict], trials: int = 4) -> dict:
    return {
        "info": {"num_trials": trials, "environment_info": {"domain_name": "airline"}},
        "tasks": tasks,
        "simulations": sims,
    }


def test_gold_action_count_follows_the_reference():
    call = {"name": "get_user_details", "arguments": {}}
    assert gold_action_count(_task("a", [])) == 0
    assert gold_action_count(_task("a", [call, {**call, "requestor": "user"}])) == 2
    assert gold_action_count(_task("a", [{"name": "transfer_to_human_agents"}])) == -1
    assert gold_action_count({"id": "a", "evaluation_criteria": {"actions": None}}) == 0
    with pytest.raises(ValueError, match="no evaluation criteria"):
        gold_action_count({"id": "a"})


def test_pass_hat_k_success_threshold_infra_errors_and_costs():
    tasks = [_task("1", []), _task("2", [{"name": "x"}])]
    sims = [_sim("1", t, 1.0 - 1e-7, agent_cost=0.5) for t in range(4)]
    sims += [_sim("2", t, 1.0 if t < 2 else 0.0, agent_cost=None) for t in range(4)]
    sims.append(
        {**_sim("2", 4, 0.0), "termination_reason": "infrastructure_error", "agent_cost": 9.0}
    )
    scores = domain_scores(_document(sims, tasks))
    assert scores.pass_hat[1] == (1.0 + 0.5) / 2
    assert scores.pass_hat[2] == (1.0 + 1 / 6) / 2
    assert scores.pass_hat[4] == 0.5
    assert scores.cost == 0.5  # the mean over simulations that record a cost; errors dropped
    assert scores.simulations == 8 and scores.tasks == 2


def test_fewer_trials_leave_the_higher_k_out_and_no_cost_is_none():
    tasks = [_task("1", [])]
    scores = domain_scores(_document([_sim("1", t, 1.0) for t in range(2)], tasks, trials=2))
    assert sorted(scores.pass_hat) == [1, 2]
    assert scores.percent(3) is None and scores.cost is None


def test_a_simulation_of_an_unlisted_task_is_refused():
    with pytest.raises(ValueError, match="missing from their task list"):
        domain_scores(_document([_sim("9", 0, 1.0)], [_task("1", [])]))


@pytest.mark.e2e  # runs the reference in its own Python
def test_the_reference_computes_the_same_bits(tmp_path: Path, reference_runs):  # noqa: F811
    """The reference's `compute_metrics` on the fixture runs with rewards shuffled (many ties in
    the action counts, costs partly unknown): every pass^k and cost equal to ours."""
    python = reference_python()
    rng = random.Random(25)
    paths = []
    for domain in BOARD_DOMAINS:
        document = json.loads(reference_runs[domain].read_text())
        for sim in document["simulations"]:
            sim["reward_info"]["reward"] = rng.choice([0.0, 1.0, 1.0, 1.0])
            sim["agent_cost"] = rng.choice([None, rng.random() / 10])
        path = tmp_path / f"{domain}.json"
        path.write_text(json.dumps(document))
        paths.append(path)
    script = (
        "import json, sys\n"
        "from tau2.data_model.simulation import Results\n"
        "from tau2.metrics.agent_metrics import compute_metrics\n"
        "out = {}\n"
        "for p in sys.argv[1:]:\n"
        "    m = compute_metrics(Results.load(p))\n"
        "    out[p] = {'pass': {k: v.hex() for k, v in m.pass_hat_ks.items()},\n"
        "              'cost': float(m.avg_agent_cost).hex()}\n"
        "print(json.dumps(out))\n"
    )
    import subprocess

    done = subprocess.run(
        [python, "-c", script, *map(str, paths)], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr[-2000:]
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    for path in paths:
        ours = domain_scores(json.loads(path.read_text()))
        assert {str(k): v.hex() for k, v in ours.pass_hat.items()} == theirs[str(path)]["pass"]
        assert ours.cost.hex() == theirs[str(path)]["cost"]
