"""Paired tests of two methods on the same test examples: the exact McNemar test of their
discordant pairs (`Paired`, `paired_counts`) and Holm's step-down correction over a family of
tests (`holm`, `holm_outcomes`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest

from softeval.analysis.evidence.thresholds import SIGNIFICANCE


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
