"""Issue 33, item 5: per run, the share of tasks that flip between trials and the intraclass
correlation of rewards, beside the detectable difference (checked by hand on small cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tau_mcp.harness.report.stats import flip_share, icc1
from tau_mcp.harness.report.summary import run_summary


def test_flip_share_counts_tasks_with_mixed_trials():
    assert flip_share([[True]]) is None  # no task with two trials
    assert flip_share([[True, False], [True, True], [False, False], [True]]) == (1 / 3, 3)


def test_icc1_by_hand():
    assert icc1([[1, 1], [0, 0]]) == pytest.approx(1.0)  # trials agree, tasks differ
    assert icc1([[1, 0], [1, 0]]) == pytest.approx(-1.0)  # all the variation within tasks
    # MSB = 0.5556, MSW = 0.1667, k = 3: (0.5556 - 0.1667) / (0.5556 + 2 * 0.1667) = 0.4375
    groups = [[1, 1, 1], [1, 0, 0], [0, 0, 0], [1, 1, 0]]
    assert icc1(groups) == pytest.approx(0.4375)
    # Unequal trials (means 2/3, 1, 1/2; grand mean 2/3): k0 = (N - sum n^2 / N) / (a - 1)
    unequal = [[1, 1, 0], [1], [1, 0]]
    msb = (3 * (2 / 3 - 2 / 3) ** 2 + 1 * (1 - 2 / 3) ** 2 + 2 * (0.5 - 2 / 3) ** 2) / 2
    msw = ((1 / 3) ** 2 * 2 + (2 / 3) ** 2 + 0.25 * 2) / 3
    k0 = (6 - 14 / 6) / 2
    assert icc1(unequal) == pytest.approx((msb - msw) / (msb + (k0 - 1) * msw))
    assert icc1([[1, 1], [1, 1]]) is None  # no variation: no correlation to speak of
    assert icc1([[1], [0]]) is None  # no task with two trials


def _sim(task: str, trial: int, reward: float) -> dict:
    return {
        "id": f"{task}-{trial}",
        "task_id": task,
        "trial": trial,
        "termination_reason": "user_stop",
        "reward_info": {"reward": reward},
        "messages": [],
    }


def test_the_report_shows_them_beside_the_detectable_difference():
    sims = [
        _sim(task, trial, reward)
        for task, rewards in {
            "a": [1, 1, 1],
            "b": [1, 0, 0],
            "c": [0, 0, 0],
            "d": [1, 1, 0],
        }.items()
        for trial, reward in enumerate(rewards)
    ]
    run = run_summary(Path("x.json"), {"info": {}, "simulations": sims})
    noise = run["noise"]
    assert noise["flip_share"] == 0.5 and noise["tasks_with_trials"] == 4
    assert noise["icc"] == pytest.approx(0.4375)
    assert "50% of the 4 tasks with several trials flip between trials" in noise["statement"]
    assert "(ICC(1)) is 0.44" in noise["statement"]
    assert noise["detectable_difference"] > 0
