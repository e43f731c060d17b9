"""The seed of one trial, as `tau-harness run` seeds it, without drawing the earlier trials'
seeds into a list (served simulations and Inspect epochs ask for one trial at a time)."""

from __future__ import annotations

import random
from functools import lru_cache

SEED_RANGE = 1_000_001  # each trial's seed is a draw from 0..1,000,000


@lru_cache(maxsize=4096)
def trial_seed(seed: int, trial: int) -> int:
    """The `trial`-th draw of the run's generator seeded with `seed` (the same value as
    `harness.runner.trial_seeds(seed, trial + 1)[trial]`); costs O(trial) time, O(1) memory."""
    draw = random.Random(seed).randrange
    for _ in range(trial):
        draw(SEED_RANGE)
    return draw(SEED_RANGE)
