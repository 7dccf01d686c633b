"""Twins reassigned at random: does a statistic need each base model paired with its own twin?

Claims 3 and 5 compare base models with their post-trained twins. A soft prompt that lifts every
compressed score can shrink the gap to any twin and bring the base ranking nearer to any ranking
that does not put those models last, so agreement with the twins is evidence about the twins only
where it beats the agreement with twins dealt out at random. Under the null that the pairing
carries nothing, the observed statistic is one draw among its values over every reassignment (a
permutation of the twins among the base models, the same on every task), so its share of
reassignments that do as well or better is an exact p-value: every reassignment when there are at
most `EXACT_UP_TO` models, else the observed pairing and `SAMPLED` seeded random ones (still a
valid p-value: the observed pairing counts as one of the draws).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from softeval.analysis.evidence.intervals import Interval
from softeval.analysis.evidence.thresholds import LEVEL
from softeval.analysis.ranking import swap_distances_of_scores

EXACT_UP_TO = 8  # 8! = 40,320 reassignments: every one
SAMPLED = 9_999  # beyond: the observed pairing and this many random ones
ALPHA = round((1 - LEVEL) / 2, 12)  # one-sided, as one side of the 95% intervals the other parts read


def reassignments(n: int, seed: int) -> np.ndarray:
    """(reassignments x n) permutations of range(n), the identity (the observed pairing) first:
    all n! of them up to EXACT_UP_TO models, else SAMPLED seeded random ones after the identity."""
    identity = np.arange(n)[None, :]
    if n <= EXACT_UP_TO:
        every = np.array(list(itertools.permutations(range(n))), dtype=int).reshape(-1, n)
        return np.concatenate([identity, every[1:]])  # itertools yields the identity first
    rng = np.random.default_rng([seed, n, 0x7157])
    return np.concatenate([identity, np.argsort(rng.random((SAMPLED, n)), axis=1)])


def smallest_p(n: int) -> float:
    """The smallest p-value n twinned models can give (1 / n! when every reassignment is counted)."""
    return 1 / math.factorial(n) if n <= EXACT_UP_TO else 1 / (SAMPLED + 1)


@dataclass(frozen=True)
class Reassigned:
    """A statistic (smaller: closer to the twins) at the observed pairing and over reassignments."""

    observed: float
    expected: float  # its exact mean over every reassignment (given in closed form by the caller)
    null: np.ndarray  # its value at each reassignment, the observed pairing first
    exact: bool  # every reassignment (True) or a seeded sample of them

    @property
    def p_value(self) -> float:
        """The share of reassignments whose statistic is at most the observed one (the observed included)."""
        return float(np.mean(self.null <= self.observed))

    @property
    def shown(self) -> bool:
        """The observed pairing closer than random at one-sided level ALPHA (p < 2.5%, as the other
        parts' 95% intervals are read on one side)."""
        return self.p_value < ALPHA - 1e-12  # p = 3/120 is 0.025, not below it

    def interval(self) -> Interval:
        """observed - expected, with the range of observed - (a random reassignment's value): its 2.5th
        and 97.5th percentiles by the inverted CDF, so that the upper end is below 0 exactly when
        `shown`. Not a sampling interval: the spread of the pairing's advantage over random pairings."""
        null = np.sort(self.null)
        k_low, k_high = (math.ceil(share * len(null) - 1e-9) - 1 for share in (ALPHA, 1 - ALPHA))
        return Interval(self.observed - self.expected, self.observed - null[k_high], self.observed - null[k_low])

    def text(self, unit: str) -> str:
        how = f"all {len(self.null):,}" if self.exact else f"the observed and {len(self.null) - 1:,} random"
        return (
            f"{self.observed:.4g}{' ' + unit if unit else ''} with the twins as paired, {self.expected:.4g} expected "
            "with the twins "
            f"reassigned at random; {self.p_value * len(self.null):.0f} of {how} reassignments (the observed one "
            "included) do as well or better "
            f"(exact p = {self.p_value:.4f}; shown when p < {ALPHA:.3g})"
        )


def reassigned(statistic: Callable[[np.ndarray], np.ndarray], expected: float, n: int, seed: int) -> Reassigned:
    """The statistic (reassignments x n permutations -> one value each) over `reassignments(n, seed)`."""
    perms = reassignments(n, seed)
    # rounded: reassignments with the same value in exact arithmetic must tie (means summed in another order)
    null = np.round(np.asarray(statistic(perms), dtype=float), 12)
    return Reassigned(float(null[0]), float(expected), null, n <= EXACT_UP_TO)


def swap_distance_reassigned(base: np.ndarray, post: np.ndarray, seed: int) -> Reassigned:
    """Claim 3's statistic: the swap distance between each task's base ranking and its post-trained
    ranking, summed over tasks, with the twins' scores dealt to the base models by each reassignment
    (base, post: tasks x models, models in name order; ties broken alphabetically, as
    `ranking.swap_distances_of_scores`). The exact expectation: each pair of base models gets a
    uniformly random ordered pair of distinct twins."""
    base, post = np.atleast_2d(base), np.atleast_2d(post)
    n = base.shape[1]
    upper = np.triu(np.ones((n, n), dtype=bool), k=1)
    expected = 0.0
    for b, p in zip(base, post, strict=True):
        above = p[:, None] >= p[None, :]  # twin k's score at least twin l's
        off = ~np.eye(n, dtype=bool)
        q = float(above[off].mean()) if n > 1 else 0.0  # a random ordered pair of twins says "above"
        base_above = (b[:, None] >= b[None, :])[upper]
        expected += float(np.where(base_above, 1 - q, q).sum())

    def statistic(perms: np.ndarray) -> np.ndarray:
        return sum(swap_distances_of_scores(b[None, :], p[perms]) for b, p in zip(base, post, strict=True))

    return reassigned(statistic, expected, n, seed)


def gap_reassigned(base: np.ndarray, post: np.ndarray, seed: int) -> Reassigned:
    """Claim 5's statistic: the mean over units (task x model) of |post - base|, with the twins'
    scores dealt to the base models by each reassignment (base, post: tasks x models). The exact
    expectation: each base model's mean gap to every twin."""
    base, post = np.atleast_2d(base), np.atleast_2d(post)
    expected = float(np.abs(post[:, None, :] - base[:, :, None]).mean())

    def statistic(perms: np.ndarray) -> np.ndarray:
        return np.abs(post[:, perms] - base[:, None, :]).mean(axis=(0, 2))

    return reassigned(statistic, expected, base.shape[1], seed)
