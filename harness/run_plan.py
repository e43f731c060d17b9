"""The order a run's simulations start in, and what each draws at random, as the original
τ-bench's run.py has them.

The original seeds Python's global random generator with the run's seed once; builds one
environment without a task, which draws a task index (`randint(0, len(split))`, off by one, so
it may even draw past the split's end: the original then crashes, we only draw); then, trial by
trial, it shuffles the trial's task list (with `--shuffle`) and runs the tasks in that order,
and its few-shot agent draws the examples it shows from the same generator as each task
starts. Run one at a time (its `--max-concurrency 1`) that is one fixed sequence, rebuilt here
from the seed alone: so each simulation gets the order and the draw it gets there, in any
process and with any concurrency.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

#: What a simulation draws from the run's generator as it starts (None: nothing).
Draw = Callable[[random.Random], list[int]]


@dataclass(frozen=True)
class RunPlan:
    order: list[tuple[str, int]]  # (task id, trial), in the order the simulations start
    draws: dict[tuple[str, int], list[int]] = field(default_factory=dict)


def plan_run(
    seed: int,
    trials: int,
    task_ids: list[str],
    shuffle: bool,
    draw: Draw | None = None,
    split_size: int | None = None,
    named: bool = False,
) -> RunPlan:
    """Trial-major order (each trial's tasks shuffled with `shuffle`), and each simulation's
    draw, all from one generator seeded with `seed` (after the original's task index draw over
    a split of `split_size` tasks, when given). With tasks `named` by id, the original shuffles
    its one list of them in place, so a trial starts from the order the last one ran in."""
    generator = random.Random(seed)
    if split_size is not None:
        generator.randint(0, split_size)
    order: list[tuple[str, int]] = []
    draws: dict[tuple[str, int], list[int]] = {}
    ids = list(task_ids)
    for trial in range(trials):
        if not named:
            ids = list(task_ids)
        if shuffle:
            generator.shuffle(ids)
        for task_id in ids:
            order.append((task_id, trial))
            if draw is not None:
                draws[(task_id, trial)] = draw(generator)
    return RunPlan(order, draws)


def sample_draw(population: int, count: int) -> Draw:
    """`count` distinct indices out of `population`, as `random.sample` picks them."""
    return lambda generator: generator.sample(range(population), count)


def lone_draw(seed: int, task_id: str, trial: int, draw: Draw) -> list[int]:
    """The draw of a simulation outside the run's plan (a served trial past the run's): from a
    generator of its own, seeded with the run's seed, task and trial."""
    return draw(random.Random(f"{seed}/{task_id}/{trial}"))
