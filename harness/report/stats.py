"""Confidence intervals and paired tests over tasks, for honest comparisons of runs.

Tasks are the unit of resampling: trials of one task are correlated, tasks are (close to)
independent draws from the benchmark. Intervals are percentile bootstrap intervals of the mean
of a per-task score. For a handful of tasks the bootstrap distribution is enumerated exactly
(every multiset of tasks, weighted by its multinomial probability), so small cases can be checked
by hand; beyond that it is sampled with a fixed seed, so a report is reproducible.

`detectable_difference` says what a run's size and trial count can tell from noise at all:
the smallest gap in success rate a paired comparison would call real (docs/diagnosis.md).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

#: Exact enumeration up to this many tasks (C(2n-1, n) multisets: 6,435 at n=8).
EXACT_MAX_TASKS = 8
RESAMPLES = 4000
SEED = 20250601


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float

    def as_dict(self) -> dict[str, float]:
        return {"value": self.estimate, "ci_low": self.low, "ci_high": self.high}


def percentile_interval(
    values: Sequence[float], weights: Sequence[float] | None = None, level: float = 0.95
) -> tuple[float, float]:
    """The (lower, upper) percentile interval of a (weighted) distribution: the smallest values
    whose cumulative weight reaches (1-level)/2 and (1+level)/2."""
    if not values:
        raise ValueError("no values")
    weights = weights if weights is not None else [1.0] * len(values)
    pairs = sorted(zip(values, weights, strict=True))
    total = sum(w for _, w in pairs)
    lo_target, hi_target = (1 - level) / 2 * total, (1 + level) / 2 * total
    eps = 1e-12 * total
    low = high = None
    cumulative = 0.0
    for value, weight in pairs:
        cumulative += weight
        if low is None and cumulative >= lo_target - eps:
            low = value
        if high is None and cumulative >= hi_target - eps:
            high = value
            break
    return float(low), float(high if high is not None else pairs[-1][0])


def _multinomial_weight(counts: Sequence[int], n: int) -> float:
    weight = math.factorial(n)
    for c in counts:
        weight //= math.factorial(c)
    return weight / n**n


def bootstrap_mean(scores: Sequence[float], level: float = 0.95) -> Interval:
    """Mean of per-task scores with its percentile bootstrap interval over tasks."""
    n = len(scores)
    if n == 0:
        raise ValueError("no tasks")
    estimate = sum(scores) / n
    if n == 1 or all(s == scores[0] for s in scores):
        return Interval(estimate, estimate, estimate)
    if n <= EXACT_MAX_TASKS:
        means, weights = [], []
        for picks in itertools.combinations_with_replacement(range(n), n):
            counts = Counter(picks)
            means.append(sum(scores[i] * c for i, c in counts.items()) / n)
            weights.append(_multinomial_weight(list(counts.values()), n))
        low, high = percentile_interval(means, weights, level)
    else:
        # One draw of all resamples' picks: the same random sequence, and so the same means,
        # as one draw per resample, without a call per resample.
        picks = random.Random(SEED).choices(scores, k=n * RESAMPLES)
        means = [sum(picks[i : i + n]) / n for i in range(0, n * RESAMPLES, n)]
        low, high = percentile_interval(means, None, level)
    return Interval(estimate, low, high)


#: The smallest p-value written as a number; below it a report says `p < 0.0001`.
P_FLOOR = 0.0001


def format_p(p: float) -> str:
    """A p-value as a report writes it: four decimals, and `p < 0.0001` below that (four
    decimals would round it to a `p = 0.0000` no test can give)."""
    return f"p < {P_FLOOR:g}" if p < P_FLOOR else f"p = {p:.4f}"


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant pairs (tasks solved by one run only)."""
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)) / 2**n
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class PairedDifference:
    """Run A minus run B on the tasks both ran."""

    tasks: int
    difference: Interval

    @property
    def significant(self) -> bool:
        return self.difference.low > 0 or self.difference.high < 0

    def verdict(self, a: str, b: str) -> str:
        d = self.difference
        span = f"{d.estimate:+.1%} (95% CI {d.low:+.1%} to {d.high:+.1%}, {self.tasks} tasks)"
        if self.significant:
            better, worse = (a, b) if d.estimate > 0 else (b, a)
            return f"{better} beats {worse} by more than noise at 95%: {a} minus {b} is {span}."
        return (
            f"No difference beyond noise at 95%: {a} minus {b} is {span}; "
            "the interval includes zero."
        )


def paired_difference(a: Sequence[float], b: Sequence[float]) -> PairedDifference:
    """Paired bootstrap over tasks of the difference of per-task success rates."""
    if len(a) != len(b) or not a:
        raise ValueError("paired scores need the same, non-empty list of tasks")
    diffs = [x - y for x, y in zip(a, b, strict=True)]
    return PairedDifference(len(diffs), bootstrap_mean(diffs))


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test of two runs, or why it does not apply (`p` None)."""

    p: float | None
    note: str


def mcnemar_test(a: dict[str, list[bool]], b: dict[str, list[bool]]) -> McNemar:
    """McNemar's exact test pairs one pass/fail outcome per task across two runs, so it applies
    only when both runs finished the same tasks, each exactly once, and some task was solved by
    one run only (the discordant pairs it weighs); otherwise the note says which is missing."""
    if set(a) != set(b):
        shared = len(set(a) & set(b))
        return McNemar(
            None,
            "McNemar's test is not shown: it pairs the same tasks, and these runs finished "
            f"different ones ({len(a)} and {len(b)}, {shared} in both).",
        )
    most = max(len(v) for v in (*a.values(), *b.values()))
    if most != 1:
        return McNemar(
            None,
            "McNemar's test is not shown: it pairs one outcome per task, and these runs have "
            f"up to {most} trials per task (the paired interval above covers several).",
        )
    only_a = sum(1 for t in a if a[t][0] and not b[t][0])
    only_b = sum(1 for t in a if b[t][0] and not a[t][0])
    if only_a + only_b == 0:
        return McNemar(
            None,
            "McNemar's test is not shown: no task was solved by one run only, so it has "
            "nothing to weigh.",
        )
    p = mcnemar_exact(only_a, only_b)
    return McNemar(
        p,
        f"McNemar exact test on the {len(a)} tasks ({only_a} solved by the first run only, "
        f"{only_b} by the second only): {format_p(p)}.",
    )


# --- what a run's size can tell from noise ----------------------------------------------------
def trial_variances(outcomes: Sequence[Sequence[bool]]) -> list[float]:
    """Per task, an estimate of one trial's success variance p(1-p): unbiased from the task's
    own trials when it has two or more; for a task with one trial, the run's pooled p(1-p),
    which is at least the average of the tasks' own (so the estimate errs on the wide side)."""
    rates = [sum(o) / len(o) for o in outcomes if o]
    pooled = sum(rates) / len(rates) if rates else 0.0
    pooled_var = pooled * (1 - pooled)
    out = []
    for trials in outcomes:
        k = len(trials)
        p = sum(trials) / k
        out.append(p * (1 - p) * k / (k - 1) if k >= 2 else pooled_var)
    return out


def detectable_difference(
    a: Sequence[Sequence[bool]], b: Sequence[Sequence[bool]] | None = None, level: float = 0.95
) -> float | None:
    """The smallest difference in success rate (pass^1, averaged over tasks) that a paired
    comparison over these tasks tells from trial-to-trial noise at `level`: the half-width of
    the normal interval of the mean per-task difference when both runs had the same true rates,
    z * sqrt(sum_i (v_i / k_i + v'_i / k'_i)) / n. Without `b`, the other run is a rerun of
    `a` of the same size (v'_i = v_i, k'_i = k_i). Tasks pair by position."""
    b = a if b is None else b
    if len(a) != len(b) or not a or not all(a) or not all(b):
        return None
    z = NormalDist().inv_cdf((1 + level) / 2)
    va, vb = trial_variances(a), trial_variances(b)
    total = sum(x / len(ta) + y / len(tb) for x, y, ta, tb in zip(va, vb, a, b, strict=True))
    return z * math.sqrt(total) / len(a)
