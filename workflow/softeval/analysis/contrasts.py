"""The pre-registered contrasts `softeval verify` tests a run on: what the method does, within a run.

A figure range (verify's other statistical check) asks whether each number is where the
published runs put it; with a handful of seeds its range is wide, and a pipeline that kills an
effect moves the two figures of a difference together, inside both ranges. A contrast is that
difference, taken within the run (soft prompt minus zero-shot, post-trained minus base, ...),
and tested one-sided, in the direction a regression takes it: it must not fall below what the
published runs make a new run's value. Half the 5 % false-alarm budget goes to the contrasts,
half to the figures, Bonferroni within each (verify.denominators). Each contrast's power, the
smallest drop it catches four times in five, is computed from the same runs (docs/reproducing.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import optimize, stats

FINAL = "@final"  # stands for the soft prompt's last evaluated step in a figure name
POWER = 0.8


@dataclass(frozen=True)
class Contrast:
    """plus minus minus, two headline figures of one run (verify.headline_figures' names)."""

    name: str
    plus: str
    minus: str
    guards: str  # the regression a drop means

    def resolve(self, names: Sequence[str]) -> tuple[str, str] | None:
        """The two figure names with the final step filled in (None: the run lacks one)."""
        steps = [int(n.split("@")[1].split("/")[0]) for n in names if "/soft_prompt@" in n]
        final = f"@{max(steps)}" if steps else FINAL
        plus, minus = (name.replace(FINAL, final) for name in (self.plus, self.minus))
        return (plus, minus) if plus in names and minus in names else None


BASE_PROMPT = "knowledge_format/base/soft_prompt"
CONTRASTS = (
    Contrast(
        "format climb",
        f"{BASE_PROMPT}{FINAL}/format",
        f"{BASE_PROMPT}@0/format",
        "tuning no longer teaches the format, or the judge calls everything formatted",
    ),
    Contrast(
        "knowledge kept",
        f"{BASE_PROMPT}{FINAL}/knowledge",
        f"{BASE_PROMPT}@0/knowledge",
        "tuning costs knowledge it did not before",
    ),
    Contrast(
        "soft prompt minus zero-shot",
        f"{BASE_PROMPT}{FINAL}/strict",
        "knowledge_format/base/zero_shot/strict",
        "the tuned prompt scores less against zero-shot (base models)",
    ),
    Contrast(
        "soft prompt minus few-shot",
        f"{BASE_PROMPT}{FINAL}/strict",
        "knowledge_format/base/few_shot/strict",
        "the tuned prompt scores less against few-shot (base models)",
    ),
    Contrast(
        "post-trained minus base",
        "knowledge_format/post/zero_shot/strict",
        "knowledge_format/base/zero_shot/strict",
        "the twins are not post-trained, or post-training teaches less",
    ),
    Contrast(
        "gap reduction",
        "score_gap/zero_shot/mean_abs",
        "score_gap/soft_prompt/mean_abs",
        "the soft prompt closes less of the base/post-trained gap than zero-shot",
    ),
    Contrast(
        "swap reduction",
        "swap_distance/zero_shot/to_post",
        "swap_distance/soft_prompt/to_post",
        "soft-prompted rankings predict the post-trained ranking less well than zero-shot's",
    ),
)


@lru_cache(maxsize=256)
def t_quantile(p: float, df: int) -> float:
    """Student's t quantile (cached: a record's ranges ask for the same few, many times)."""
    return float(stats.t.ppf(p, df))


def contrast_values(contrast: Contrast, figures: Mapping[str, Sequence[float]]) -> list[float] | None:
    """The contrast in each run, from the runs' figure values (figure name -> one value per run)."""
    names = contrast.resolve(list(figures))
    if names is None:
        return None
    plus, minus = (figures[n] for n in names)
    return [round(float(a) - float(b), 4) for a, b in zip(plus, minus, strict=True)]


def lower_bound(values: Sequence[float], sd_floor: float, tests: int, level: float) -> float | None:
    """The value below which one new run's contrast is a regression: one-sided normal prediction
    bound from n runs, Bonferroni over `tests`: mean - t(1 - a/m, n-1) * s * sqrt(1 + 1/n), s at
    least `sd_floor`. None for one run (no spread to go on)."""
    n = len(values)
    if n < 2:
        return None
    sd = max(float(np.std(values, ddof=1)), sd_floor)
    t = t_quantile(1 - (1 - level) / tests, n - 1)
    return round(float(np.mean(values)) - t * sd * math.sqrt(1 + 1 / n), 4)


def detectable_drop(values: Sequence[float], sd_floor: float, tests: int, level: float, power: float = POWER) -> float:
    """The smallest drop of a new run's true contrast that the bound catches with probability
    `power`, taking the runs' spread as the true one: the new run's standardised distance from the
    runs' mean is noncentral t (n-1 degrees of freedom), rejected below -t(1 - a/m, n-1)."""
    n = len(values)
    sd = max(float(np.std(values, ddof=1)), sd_floor)
    df, scale = n - 1, sd * math.sqrt(1 + 1 / n)
    critical = t_quantile(1 - (1 - level) / tests, df)

    def shortfall(drop: float) -> float:
        return float(stats.nct.cdf(-critical, df, -drop / scale)) - power

    high = scale
    while shortfall(high) < 0:  # widen until the power is reached (few runs: a wide t)
        if high > 1e6 * scale:
            return math.inf
        high *= 2
    return float(optimize.brentq(shortfall, 0.0, high))
