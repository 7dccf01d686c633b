"""Per-example evidence behind the claims: paired resampling of test items, choice spread.

Every comparison here is paired: two methods (or a base model and its post-trained twin, or
two base models) answer the same test examples, so a resample draws the same examples for
both sides. Across units (model x task) one index matrix per task resamples every unit of that
task alike (the items' shared difficulty is part of the noise), and the unit means are
averaged, which is how the tables average them.

What a resample draws is the *item* a test example asks about. On the embedded world every task
asks about the same test countries, and a model that read a country's facts knows them in every
task: the country is the unit of the noise, shared across tasks. `declare_items` says which item
each test example asks about; tasks that share items are resampled by one draw of those items
(every task that asks about a drawn country takes all its questions about it). A task whose items
are declared by no other task (a real benchmark: each example its own item) is resampled by its
own examples, as before: one index matrix per task.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.stats import beta, binom, binomtest

# The paper's thresholds: format "saturates" at 90% of answers in form; knowledge is "flat"
# when it moves by at most 0.05 (an equivalence margin: its interval must lie within it).
FORMAT_SATURATED = 0.9
KNOWLEDGE_FLAT = 0.05
# A difference is significant below this exact McNemar p-value.
SIGNIFICANCE = 0.05
# Every interval reported is a 95% one; a verdict against the claimed direction reads one side of it.
LEVEL = 0.95
# The two one-sided tests of an equivalence (TOST) at 5% each: the 90% interval within the margin.
EQUIVALENCE_LEVEL = 0.90
# How far below a baseline a method may score and still count as "not below" it (non-inferiority):
# the same five points as "flat".
NON_INFERIORITY = 0.05

# (role, model, task, method, step) -> per-example metric values, in test order
Unit = tuple[str, str, str, str, int | None]
MetricReader = Callable[[Unit, str], np.ndarray]


@dataclass(frozen=True)
class Interval:
    """An estimate with its 95% percentile-bootstrap interval; `draws`, where kept, are the
    resampled values the interval is read from (shifted like it), so that other levels can be
    read too (`bounds`: the 90% interval of an equivalence test, the Holm-corrected side of a
    refutation)."""

    estimate: float
    low: float
    high: float
    draws: np.ndarray | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        return f"{self.estimate:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"

    def bounds(self, level: float) -> tuple[float, float]:
        """The central interval at `level`: read from the draws; without draws only the stated
        95% one is known, and it is returned for any lower level (wider: conservative)."""
        if self.draws is None:
            if level > LEVEL + 1e-12:
                raise ValueError(f"an interval without its draws has no {level:.0%} bounds")
            return self.low, self.high
        tail = 100 * (1 - level) / 2
        return float(np.percentile(self.draws, tail)), float(np.percentile(self.draws, 100 - tail))


# ---- what a resample draws: test items, shared across the tasks that ask about them ----------

# task -> the item each of its test examples asks about, in test order (declare_items)
_ITEMS: dict[str, tuple[str, ...]] = {}


def declare_items(items: Mapping[str, Sequence[str] | None]) -> None:
    """Say which item (the world's country; for a real benchmark, the example itself) each test
    example of a task asks about, in test order: from then on `task_resamples` draws items, one
    draw shared by every task that asks about them. None forgets a task's items."""
    for task, keys in items.items():
        if keys is None:
            _ITEMS.pop(task, None)
        else:
            _ITEMS[task] = tuple(str(key) for key in keys)
    task_resamples.cache_clear()


def declared_items() -> dict[str, tuple[str, ...]]:
    return dict(_ITEMS)


@contextmanager
def shared_items(items: Mapping[str, Sequence[str] | None]) -> Iterator[None]:
    """`declare_items` for the duration of a block; what was declared before comes back after it."""
    before = dict(_ITEMS)
    declare_items(items)
    try:
        yield
    finally:
        _ITEMS.clear()
        _ITEMS.update(before)
        task_resamples.cache_clear()


def items_of(examples: Iterable[Mapping[str, Any]], key: str = "entity") -> list[str]:
    """The item each test example asks about: its `key` field where it has one (the embedded
    world's examples name their country), else its id (a real benchmark's example is its own item)."""
    return [str(row[key]) if row.get(key) is not None else f"id:{row['id']}" for row in examples]


def _component(task: str) -> list[str]:
    """The declared tasks linked to `task` by shared items (directly or through others), sorted."""
    members, frontier = {task}, [task]
    while frontier:
        keys = set(_ITEMS[frontier.pop()])
        for other, other_keys in _ITEMS.items():
            if other not in members and not keys.isdisjoint(other_keys):
                members.add(other)
                frontier.append(other)
    return sorted(members)


def _own_seed(task: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(task.encode("utf-8"))])


@functools.lru_cache(maxsize=64)  # read-only: every caller indexes with it, none writes to it
def task_resamples(task: str, n_examples: int, n_resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's resampled test examples of one task: a (resamples x examples) index matrix.

    One matrix per task, shared by every model, role, method and step evaluated on it, so that
    the items' common difficulty moves all of them together (as it does between test sets); the
    same in every table and claim of a run. Without declared items (`declare_items`) it resamples
    the task's examples with its own seed (from `seed` and the task's name), so tasks of equal size
    are not resampled alike. With them, it draws items: the tasks that share items draw them
    together (a country drawn twice brings every task's questions about it twice)."""
    keys = _ITEMS.get(task)
    if keys is None:
        index = _own_seed(task, seed).integers(0, n_examples, (n_resamples, n_examples), dtype=np.int32)
    else:
        if len(keys) != n_examples:
            raise ValueError(
                f"task {task}: {len(keys)} items declared for {n_examples} test examples; declare one per example"
            )
        index = _item_resamples(task, keys, n_resamples, seed)
    index.flags.writeable = False
    return index


def _item_resamples(task: str, keys: tuple[str, ...], n_resamples: int, seed: int) -> np.ndarray:
    """Resampled examples of `task` from a draw of its items: with replacement, as many items as it
    has, every example of a drawn item taken; the draw shared with every task linked to it by items.

    The linked tasks draw from the union of their items, one row of draws per resample (seeded by
    the union, so adding a task that asks about the same items changes no other task's draws); a
    task takes, in order, the drawn items it asks about, until it has as many as it asks about
    (topped up from its own seed where the row holds too few): for each task, an ordinary
    bootstrap of its items, and two tasks asking about the same items draw the same ones."""
    own = list(dict.fromkeys(keys))  # the task's items, in order of first appearance
    positions: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        positions.setdefault(key, []).append(i)
    component = _component(task)
    if component == [task]:  # items of its own: today's per-task draw (items = examples: the same index)
        drawn = _own_seed(task, seed).integers(0, len(own), (n_resamples, len(own)), dtype=np.int32)
    else:
        union = sorted({key for other in component for key in _ITEMS[other]})
        stream = np.random.default_rng([seed, zlib.crc32("\n".join(union).encode("utf-8"))]).integers(
            0, len(union), (n_resamples, len(union))
        )
        where = {key: i for i, key in enumerate(own)}
        translate = np.array([where.get(key, -1) for key in union])
        mine = translate[stream]  # the task's item for each draw, -1 where the drawn item is not its
        if len(own) == len(union):
            drawn = mine
        else:
            top_up = _own_seed(task, seed)
            drawn = np.empty((n_resamples, len(own)), dtype=np.int64)
            for row, draws in enumerate(mine):
                taken = draws[draws >= 0][: len(own)]
                extra = top_up.integers(0, len(own), len(own) - len(taken))
                drawn[row] = np.concatenate([taken, extra])
    sizes = {len(positions[key]) for key in own}
    if len(sizes) == 1:  # every item asked as often (the world: once per task): a rectangular take
        table = np.array([positions[key] for key in own])
        return table[drawn].reshape(n_resamples, len(keys)).astype(np.int32)
    # items asked unequally often: take whole items until the resample has as many examples, cut there
    top_up = _own_seed(f"{task}/unequal", seed)
    index = np.empty((n_resamples, len(keys)), dtype=np.int32)
    for row, draws in enumerate(drawn):
        taken = [p for d in draws for p in positions[own[d]]]
        while len(taken) < len(keys):
            taken += positions[own[int(top_up.integers(0, len(own)))]]
        index[row] = taken[: len(keys)]
    return index


def percentile_interval(estimate: float, draws: np.ndarray) -> Interval:
    draws = np.asarray(draws, dtype=float)
    low, high = np.percentile(draws, [2.5, 97.5])
    return Interval(estimate, float(low), float(high), draws)


def bias_shifted_interval(estimate: float, draws: np.ndarray) -> Interval:
    """The percentile interval moved by the bootstrap's bias (mean of draws minus estimate).

    For swap distances: resampling adds noise, and noise only ever adds discordant pairs among
    close models, so raw percentiles sit above the distance a test set of this size gives on
    average; shifting them back is what lets the interval cover that expectation (measured by
    simulation in tests/unit/analysis/test_coverage.py)."""
    draws = np.asarray(draws, dtype=float)
    return percentile_interval(estimate, draws - (float(np.mean(draws)) - estimate))


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
    """The equivalence test (two one-sided tests at 5% each, TOST): the 90% interval within ±margin.
    An interval without its draws is read at 95% (wider: conservative)."""
    low, high = interval.bounds(EQUIVALENCE_LEVEL) if interval.draws is not None else (interval.low, interval.high)
    return -margin <= low and high <= margin


def exact_upper(successes: int, trials: int, level: float = LEVEL) -> float:
    """The exact (Clopper-Pearson) upper bound of a binomial share: the upper end of its central
    `level` interval (0/60 at 95%: 0.060, above a near-zero threshold of 0.05)."""
    if successes >= trials:
        return 1.0
    return float(beta.ppf(1 - (1 - level) / 2, successes + 1, trials - successes))


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


def holm(p_values: Sequence[float], alpha: float = SIGNIFICANCE) -> list[bool]:
    """Holm's step-down rejections at family-wise level `alpha` (Holm 1979), in input order:
    the k-th smallest p-value (from 0) is compared with alpha / (m - k) until one fails.
    Not statsmodels' `multipletests(method="holm")`: eight lines against a runtime dependency
    (statsmodels is a test extra); tests/unit/analysis/test_no_vacuous_verdicts.py checks the two agree."""
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
