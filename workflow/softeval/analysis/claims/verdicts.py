"""How a part's interval becomes a verdict, and a claim's verdict from its parts' (the rules are in
the package's docstring): one place, so that every claim reads its intervals alike."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from softeval.analysis.evidence import EQUIVALENCE_LEVEL, KNOWLEDGE_FLAT, LEVEL, Interval, equivalent

HOLDS, NOT_SHOWN, REFUTED, NOT_APPLICABLE = "holds", "not shown", "refuted", "not applicable"
VERDICTS = (HOLDS, NOT_SHOWN, REFUTED, NOT_APPLICABLE)


def greater(interval: Interval, line: float = 0.0) -> str:
    """Verdict on 'the quantity is above `line`' (0; minus a margin for 'not below')."""
    return HOLDS if interval.low > line else REFUTED if interval.high < line else NOT_SHOWN


def less(interval: Interval, line: float = 0.0) -> str:
    """Verdict on 'the quantity is below `line`'."""
    return HOLDS if interval.high < line else REFUTED if interval.low > line else NOT_SHOWN


def within(interval: Interval, margin: float) -> str:
    """Verdict on 'the quantity is within ±margin', an equivalence: holds when the two one-sided
    tests at 5% both reject (the 90% interval inside, read from the interval's draws; an interval
    without draws is read at 95%, conservatively); refuted when the 95% interval lies wholly outside."""
    if equivalent(interval, margin):
        return HOLDS
    return REFUTED if interval.low > margin or interval.high < -margin else NOT_SHOWN


# The level at which one part's interval refutes: the 95% interval's one side.
REFUTE_ALPHA = (1 - LEVEL) / 2
GREATER, LESS, WITHIN = "greater", "less", "within"


@dataclass(frozen=True)
class Test:
    """How a part's verdict reads its interval: the claimed side of `line` (GREATER, LESS), or
    WITHIN ±line; `draws` what a refutation reads (default: the interval's own draws)."""

    side: str
    line: float = 0.0
    draws: np.ndarray | None = field(default=None, repr=False, compare=False)

    def p_value(self, draws: np.ndarray) -> float:
        """The bootstrap p-value of the refutation: the share of draws not on the opposite side."""
        if self.side == GREATER:
            return float(np.mean(draws >= self.line))
        if self.side == LESS:
            return float(np.mean(draws <= self.line))
        return float(min(np.mean(draws <= self.line), np.mean(draws >= -self.line)))

    def refutes(self, draws: np.ndarray, alpha: float) -> bool:
        """Whether the draws lie on the opposite side at one-sided level `alpha` (percentiles, as the
        interval is read: at alpha = 2.5% exactly the 95% interval's rule)."""
        low, high = np.percentile(draws, [100 * alpha, 100 * (1 - alpha)])
        if self.side == GREATER:
            return bool(high < self.line)
        if self.side == LESS:
            return bool(low > self.line)
        return bool(low > self.line or high < -self.line)


def combine(verdicts: list[str]) -> str:
    """A claim's verdict from its parts' (after Holm's correction; scope notes left out): holds only
    when every part holds; a part that cannot be tested makes it not shown (all: not applicable)."""
    tested = [v for v in verdicts if v != NOT_APPLICABLE]
    if not tested:
        return NOT_APPLICABLE
    if REFUTED in tested:
        return REFUTED
    if len(tested) < len(verdicts):
        return NOT_SHOWN
    return HOLDS if all(v == HOLDS for v in tested) else NOT_SHOWN


# The caveat of a part that only says what a claim leaves out (models without a post-trained twin):
# not a part of the claim, so it neither holds nor blocks.
SCOPE_NOTE = "scope note"


@dataclass
class Part:
    claim: int
    part: str
    verdict: str
    evidence: str
    interval: Interval | None = None
    caveat: str = ""
    test: Test | None = None  # how the verdict reads the interval (what Holm's correction re-reads)

    def row(self) -> dict:
        iv = self.interval
        return {
            "claim": self.claim,
            "part": self.part,
            "verdict": self.verdict,
            "caveat": self.caveat,
            "estimate": np.nan if iv is None else iv.estimate,
            "ci_low": np.nan if iv is None else iv.low,
            "ci_high": np.nan if iv is None else iv.high,
            "evidence": self.evidence,
        }


def holm_refutations(parts: list[Part]) -> list[Part]:
    """Holm's step-down correction of the claim's refutations: its k tested parts (those whose
    verdict reads draws) ordered by their refutation p-value, the j-th (from 0) refuted at one-sided
    level 2.5% / (k - j) until one is not. A part refuted at 2.5% but not at its corrected level
    reads "not shown", with the caveat saying so; no verdict other than "refuted" changes."""
    tested = []
    for i, part in enumerate(parts):
        draws = None if part.test is None else part.test.draws
        if draws is None and part.test is not None and part.interval is not None:
            draws = part.interval.draws
        if draws is not None and part.verdict != NOT_APPLICABLE:
            tested.append((part.test.p_value(draws), i, draws))
    kept: set[int] = set()
    for j, (_, i, draws) in enumerate(sorted(tested, key=lambda t: (t[0], t[1]))):
        if not parts[i].test.refutes(draws, REFUTE_ALPHA / (len(tested) - j)):
            break
        kept.add(i)
    out = list(parts)
    for _, i, _ in tested:
        if out[i].verdict == REFUTED and i not in kept:
            why = f"refuted alone, not after Holm's correction over the claim's {len(tested)} tested parts"
            out[i] = replace(out[i], verdict=NOT_SHOWN, caveat=why)
    return out


def claim_verdicts(parts: pd.DataFrame) -> dict[int, str]:
    """Each claim's verdict from its parts' (scope notes left out)."""
    parts = verdict_columns(parts)
    tested = parts[parts["caveat"] != SCOPE_NOTE]
    return {
        int(claim): combine(list(tested.loc[tested["claim"] == claim, "verdict"]) or [NOT_APPLICABLE])
        for claim in sorted(set(parts["claim"]))
    }


def verdict_columns(parts: pd.DataFrame) -> pd.DataFrame:
    """A claims table with separate `verdict` and `caveat` columns. Tables written before the
    caveat had a column of its own held it in the verdict's text, 'not shown (why)': those (the
    other machines' records under tests/data/reference-runs) are read by splitting it off once."""
    if "caveat" in parts.columns:
        return parts.assign(caveat=parts["caveat"].fillna(""))
    split = parts["verdict"].str.partition(" (")  # columns 0, 1, 2: before, " (", after
    return parts.assign(verdict=split[0], caveat=split[2].str.removesuffix(")"))


def display_verdict(verdict: str, caveat: str) -> str:
    """A part's verdict as claims.md prints it: the caveat in brackets after it."""
    return f"{verdict} ({caveat})" if caveat else verdict


def stability(verdicts: Mapping[str, str], noun: str = "runs") -> str:
    """'not shown in 5 of 5 runs', or each verdict's count when the runs disagree."""
    counts = Counter(verdicts.values())
    n = len(verdicts)
    return "; ".join(f"{v} in {c} of {n} {noun}" for v, c in counts.most_common())


# A verdict stated for the method, not for one training draw, is the same in at least 9 of 10 runs
# that differ only in their seed.
STABLE_SHARE = 0.9


def unstable(verdicts: Mapping[str, str]) -> str:
    """Why a claim's verdict over runs of different seeds is unstable ('' when it is not): its most
    common verdict in fewer than 9 of 10. A seed changes the zoo's initialisation, its data order
    and the tuning; a run's intervals resample its test questions with all of those fixed, so they
    cannot say how far another seed moves the verdict: the runs' disagreement is what says it."""
    if not verdicts:
        return ""
    (top, count), n = Counter(verdicts.values()).most_common(1)[0], len(verdicts)
    if count >= STABLE_SHARE * n:
        return ""
    return (
        f"unstable: {top} in {count} of {n}, fewer than 9 in 10. The verdict depends on the training draw "
        "(a seed changes the zoo's initialisation, its data order and the tuning), which a run's intervals do "
        "not cover: they resample its test questions with the trained models and prompts fixed"
    )


def flat_text(change: Interval, margin: float = KNOWLEDGE_FLAT) -> str:
    """The equivalence test in words: the 90% interval the two one-sided tests read."""
    low, high = change.bounds(EQUIVALENCE_LEVEL) if change.draws is not None else (change.low, change.high)
    level = EQUIVALENCE_LEVEL if change.draws is not None else LEVEL
    return f"flat: the {level:.0%} interval [{low:+.3f}, {high:+.3f}] within ±{margin} (two one-sided tests at 5%)"


# A bound this close to its decision line decides a verdict another bootstrap seed could flip.
FRAGILE = 0.005


def fragile_note(part: Part) -> str:
    """'; fragile: ...' when a bound the verdict reads lies within FRAGILE of its decision line
    (the 95% interval's ends; an equivalence's 90% ends against ±margin too); '' otherwise."""
    test, iv = part.test, part.interval
    if test is None or iv is None or part.verdict == NOT_APPLICABLE:
        return ""
    if test.side == WITHIN:
        low, high = iv.bounds(EQUIVALENCE_LEVEL) if iv.draws is not None else (iv.low, iv.high)
        checks = [(low, -test.line), (high, test.line), (iv.low, test.line), (iv.high, -test.line)]
    else:
        checks = [(iv.low, test.line), (iv.high, test.line)]
    near = [(bound, line) for bound, line in checks if abs(bound - line) < FRAGILE]
    if not near:
        return ""
    bound, line = min(near, key=lambda c: abs(c[0] - c[1]))
    return (
        f"; fragile: an interval bound ({bound:+.4f}) lies within {FRAGILE} of the decision line ({line:+g}): "
        "another bootstrap seed could flip the verdict"
    )
