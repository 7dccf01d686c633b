"""The paired bootstrap over test items: a mean difference, a difference of absolute gaps, a mean
and a near-zero share, each averaged over units (model x task) with every unit of a task
resampled by that task's one index matrix (`items.task_resamples`)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

import numpy as np
from scipy.stats import binom

from softeval.analysis.evidence.intervals import Interval, percentile_interval
from softeval.analysis.evidence.items import task_resamples
from softeval.layout import UnitKey

# a unit (softeval.layout.UnitKey: model, role, task, method, step) and a metric -> its per-example
# values, in test order
MetricReader = Callable[[UnitKey, str], np.ndarray]


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


def near_zero_share(
    units: Sequence[np.ndarray],
    threshold: float,
    n_resamples: int = 1000,
    seed: int = 0,
    tasks: Sequence[str] | None = None,
    stream: str = "",
) -> tuple[float, np.ndarray, np.ndarray]:
    """Share of units (0/1 arrays) whose score is below `threshold`: on the data, and per resample
    a lower and an upper draw that carry each unit's exact binomial uncertainty.

    A resample draws each task's items (`task_resamples`); then each unit's share is drawn from its
    exact (Clopper-Pearson) confidence distribution given the resampled count k of n: below the
    threshold with probability P(Binomial(n, threshold) > k) for the lower draw (a unit at 0 of 60
    counts with 0.954, not 1: its exact 95% upper bound, 0.060, is above 0.05), P(... >= k) for the
    upper one (one uniform per unit and resample for both, so lower <= upper). For one unit the
    2.5th percentile of the lower draws is 0 exactly when its exact upper bound is above the
    threshold; a share no resample can move (every unit at 0) is no longer an interval of width 0.
    `stream` names the uniforms' seed, so two shares compared are drawn apart."""
    if not units:
        raise ValueError("near_zero_share needs at least one unit")
    rng = np.random.default_rng([seed, zlib.crc32(f"near zero/{stream}".encode())])
    share, lower, upper = 0.0, np.zeros(n_resamples), np.zeros(n_resamples)
    for values, task in zip(units, _tasks_of(tasks, len(units)), strict=True):
        values = np.asarray(values, dtype=float)
        n = len(values)
        share += float(values.mean() < threshold)
        counts = np.rint(values[task_resamples(task, n, n_resamples, seed)].sum(axis=1)).astype(int)
        u = rng.random(n_resamples)
        # P(Beta(k + 1, n - k) < t) = P(Binomial(n, t) > k); P(Beta(k, n - k + 1) < t) = P(Binomial(n, t) >= k)
        tail = _binom_sf(counts, n, threshold)
        tail_with = _binom_sf(counts - 1, n, threshold)
        lower += u < tail
        upper += u < tail_with
    return share / len(units), lower / len(units), upper / len(units)


def _binom_sf(k: np.ndarray, n: int, p: float) -> np.ndarray:
    """P(Binomial(n, p) > k), elementwise (1 where k < 0)."""
    return np.where(k < 0, 1.0, binom.sf(k, n, p))
