"""An estimate with its interval (`Interval`), and the ways one is read: from bootstrap draws
(percentile, or shifted by the bootstrap's bias), as an equivalence test, or as an exact binomial
bound. What every check of the evidence returns, apart from how its draws were made."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.stats import beta

from softeval.analysis.evidence.thresholds import EQUIVALENCE_LEVEL, LEVEL


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
