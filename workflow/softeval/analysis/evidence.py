"""Per-example evidence behind the claims: paired resampling of test examples, choice spread.

Every comparison here is paired: two methods (or a base model and its post-trained twin, or
two base models) answer the same test examples, so a resample draws the same examples for
both sides. Across units (model x task) one index matrix per task resamples every unit of that
task alike (the items' shared difficulty is part of the noise), and the unit means are
averaged, which is how the tables average them.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

# The paper's thresholds: format "saturates" at 90% of answers in form; knowledge is "flat"
# when it moves by at most 0.05 (an equivalence margin: its interval must lie within it).
FORMAT_SATURATED = 0.9
KNOWLEDGE_FLAT = 0.05
# A difference is significant below this exact McNemar p-value.
SIGNIFICANCE = 0.05

# (role, model, task, method, step) -> per-example metric values, in test order
Unit = tuple[str, str, str, str, int | None]
MetricReader = Callable[[Unit, str], np.ndarray]


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% percentile-bootstrap interval."""

    estimate: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


@functools.lru_cache(maxsize=32)  # read-only: every caller indexes with it, none writes to it
def task_resamples(task: str, n_examples: int, n_resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's resampled test examples of one task: a (resamples x examples) index matrix.

    One matrix per task, shared by every model, role, method and step evaluated on it, so that
    the items' common difficulty moves all of them together (as it does between test sets); its
    own seed per task (from `seed` and the task's name), so tasks of equal size are not resampled
    alike, and the same in every table and claim of a run."""
    rng = np.random.default_rng([seed, zlib.crc32(task.encode("utf-8"))])
    index = rng.integers(0, n_examples, (n_resamples, n_examples), dtype=np.int32)
    index.flags.writeable = False
    return index


def percentile_interval(estimate: float, draws: np.ndarray) -> Interval:
    return Interval(estimate, float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5)))


def bias_shifted_interval(estimate: float, draws: np.ndarray) -> Interval:
    """The percentile interval moved by the bootstrap's bias (mean of draws minus estimate).

    For swap distances: resampling adds noise, and noise only ever adds discordant pairs among
    close models, so raw percentiles sit above the distance a test set of this size gives on
    average; shifting them back is what lets the interval cover that expectation (measured by
    simulation in tests/unit/analysis/test_coverage.py)."""
    shift = float(np.mean(draws)) - estimate
    return Interval(estimate, float(np.percentile(draws, 2.5)) - shift, float(np.percentile(draws, 97.5)) - shift)


def _tasks_of(tasks: Sequence[str] | None, n_units: int) -> list[str]:
    """Each unit's task; without `tasks`, every unit stands alone (one task each)."""
    if tasks is None:
        return [f"unit {i}" for i in range(n_units)]
    if len(tasks) != n_units:
        raise ValueError(f"{len(tasks)} task names for {n_units} units")
    return list(tasks)


def paired_bootstrap(
    pairs: Sequence[tuple[np.ndarray, np.ndarray]],
    statistic: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    tasks: Sequence[str] | None = None,
) -> Interval:
    """Mean over units of statistic(first, second) (default: mean difference), with its 95%
    percentile interval.

    `pairs` holds one (first, second) pair of equal-length per-example arrays per unit and
    `tasks` each unit's task: every unit of a task is resampled with that task's one index
    matrix (`task_resamples`), both arrays alike. `statistic` maps two (resamples x examples)
    matrices to one value per resample."""
    if not pairs:
        raise ValueError("paired_bootstrap needs at least one unit")
    statistic = statistic or (lambda a, b: a.mean(axis=-1) - b.mean(axis=-1))
    estimate, draws = 0.0, np.zeros(n_resamples)
    sizes: dict[str, int] = {}
    for (first, second), task in zip(pairs, _tasks_of(tasks, len(pairs)), strict=True):
        first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
        if first.shape != second.shape or first.ndim != 1 or len(first) == 0:
            raise ValueError("paired_bootstrap: each unit needs two non-empty arrays of the same length")
        if sizes.setdefault(task, len(first)) != len(first):
            raise ValueError(f"paired_bootstrap: units of task {task} have different numbers of test examples")
        index = task_resamples(task, len(first), n_resamples, seed)
        estimate += float(statistic(first[None, :], second[None, :])[0])
        draws += statistic(first[index], second[index])
    return percentile_interval(estimate / len(pairs), draws / len(pairs))


def absolute_gap_difference(
    quads: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    n_resamples: int = 1000,
    seed: int = 0,
    tasks: Sequence[str] | None = None,
) -> Interval:
    """Mean over units of |post_a - base_a| - |post_b - base_b| (method a against method b).

    Per unit: (base_a, post_a, base_b, post_b), per-example arrays of the same test examples,
    resampled with their task's index matrix (`task_resamples`)."""
    if not quads:
        raise ValueError("absolute_gap_difference needs at least one unit")
    estimate, draws = 0.0, np.zeros(n_resamples)
    for arrays, task in zip(quads, _tasks_of(tasks, len(quads)), strict=True):
        base_a, post_a, base_b, post_b = (np.asarray(a, dtype=float) for a in arrays)
        estimate += abs(post_a.mean() - base_a.mean()) - abs(post_b.mean() - base_b.mean())
        index = task_resamples(task, len(base_a), n_resamples, seed)

        def gap(base: np.ndarray, post: np.ndarray, index: np.ndarray = index) -> np.ndarray:
            return np.abs(post[index].mean(axis=1) - base[index].mean(axis=1))

        draws += gap(base_a, post_a) - gap(base_b, post_b)
    return percentile_interval(estimate / len(quads), draws / len(quads))


def bootstrap_mean(
    units: Sequence[np.ndarray], n_resamples: int = 1000, seed: int = 0, tasks: Sequence[str] | None = None
) -> Interval:
    """Mean over units of each unit's mean, with its 95% percentile interval: one-sided
    paired_bootstrap (every task's units resampled with that task's index matrix)."""
    if not units:
        raise ValueError("bootstrap_mean needs at least one unit")
    estimate, draws = 0.0, np.zeros(n_resamples)
    for values, task in zip(units, _tasks_of(tasks, len(units)), strict=True):
        values = np.asarray(values, dtype=float)
        estimate += float(values.mean())
        draws += values[task_resamples(task, len(values), n_resamples, seed)].mean(axis=1)
    return percentile_interval(estimate / len(units), draws / len(units))


def equivalent(interval: Interval, margin: float) -> bool:
    """The equivalence test: the whole 95% interval within ±margin."""
    return -margin <= interval.low and interval.high <= margin


def holm(p_values: Sequence[float], alpha: float = SIGNIFICANCE) -> list[bool]:
    """Holm's step-down rejections at family-wise level `alpha` (Holm 1979), in input order:
    the k-th smallest p-value (from 0) is compared with alpha / (m - k) until one fails."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for k, i in enumerate(order):
        if p_values[i] > alpha / (len(p_values) - k):
            break
        rejected[i] = True
    return rejected


@dataclass(frozen=True)
class Paired:
    """How two methods split the test examples they disagree on."""

    only_first: int
    only_second: int

    @property
    def p_value(self) -> float:
        """Exact McNemar: two-sided binomial test of the discordant pairs against 1/2."""
        n = self.only_first + self.only_second
        return 1.0 if n == 0 else float(binomtest(self.only_first, n, 0.5).pvalue)

    @property
    def outcome(self) -> str:
        """'first better' or 'second better' where significant, else 'within noise'."""
        if self.p_value >= SIGNIFICANCE:
            return "within noise"
        return "first better" if self.only_first > self.only_second else "second better"


def holm_outcomes(tests: Sequence[Paired], alpha: float = SIGNIFICANCE) -> list[str]:
    """Each test's outcome with Holm's correction over the family: 'within noise' unless rejected."""
    rejected = holm([t.p_value for t in tests], alpha)
    return [
        "within noise" if not r else "first better" if t.only_first > t.only_second else "second better"
        for t, r in zip(tests, rejected, strict=True)
    ]


def paired_counts(first: np.ndarray, second: np.ndarray) -> Paired:
    """The discordant pairs of two per-example 0/1 arrays of the same test examples."""
    a, b = np.asarray(first, dtype=bool), np.asarray(second, dtype=bool)
    return Paired(int((a & ~b).sum()), int((b & ~a).sum()))


@dataclass(frozen=True)
class ChoiceSpread:
    """How a unit's chosen options spread over the option letters."""

    counts: dict[int, int]
    n_options: int

    @property
    def entropy(self) -> float:
        """Shannon entropy of the chosen options, normalised by log(n_options): 1 = even, 0 = one option."""
        total = sum(self.counts.values())
        if total == 0 or self.n_options < 2:
            return 1.0
        h = -sum(c / total * math.log(c / total) for c in self.counts.values() if c)
        return abs(h) / math.log(self.n_options)  # abs: one option gives -0.0

    @property
    def top_share(self) -> float:
        total = sum(self.counts.values())
        return max(self.counts.values()) / total if total else 0.0

    @property
    def top_letter(self) -> str:
        return chr(ord("A") + max(self.counts, key=lambda k: (self.counts[k], -k))) if self.counts else "-"


# A tuned prompt that puts 121 of 130 answers on "D" has normalised entropy 0.24; even choices
# are 1.0 and a model that knows its answers spreads them as the gold letters spread (about 1.0).
COLLAPSE_ENTROPY = 0.5


def choice_spread(chosen: Sequence[int], n_options: int) -> ChoiceSpread:
    return ChoiceSpread(dict(Counter(int(c) for c in chosen)), n_options)
