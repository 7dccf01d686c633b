"""The paper's claims (arXiv:2606.12117), checked on this run's per-example scores.

A claim is one object (`Claim`: number, statement, what the run needs for it, its check) in the
`CLAIMS` registry; `@claim(...)` on a check function adds one (docs/extending.md).

Each claim is split into parts; each part has an estimate and a 95% interval, and one verdict rule:

- **holds**: the direction is the claimed one and the interval excludes the opposite (an
  equivalence, "flat": the 90% interval within the margin, the two one-sided tests at 5%; a
  non-inferiority, "not below": the interval's lower end above minus the margin);
- **refuted**: the interval lies wholly on the opposite side, at the level Holm's correction over
  the claim's tested parts leaves it (one part: the 95% interval; k parts: the smallest one-sided
  p-value at 2.5% / k, and so on step-down), so a claim of many parts is not refuted by chance
  more often than one of one part;
- **not shown**: otherwise (the data cannot tell), and also where the run cannot test a part it
  could test in principle (format already at the level before tuning: no climb to see);
- **not applicable**: the run cannot test it (one model: no ranking; no post-trained twins;
  no closed tasks).

A claim **holds** when every part holds: a part that cannot be tested is never dropped, it makes
the claim "not shown" (or "not applicable" when no part can be tested). It is **refuted** when a
part is refuted after Holm's correction, and **not shown** otherwise. The one part left out of
that is a scope note ("models without a post-trained twin": the claim is checked over the others).

A model may have no post-trained twin (a base-only entry): claim 1 and claim 2's base part use
every model; claim 2's post-trained part and claims 3-5 use the models with a twin, and each of
them adds a "models without a post-trained twin" scope note (not applicable: "no post-trained twin:
...") that names the others. Claims 3 and 4 rank models: fewer than two with a twin, not applicable.

What the intervals are (coverage measured by simulation in tests/unit/analysis/test_coverage.py,
at the embedded default's shape):
- means and mean differences (claims 1, 2, 5): paired percentile bootstrap over test items, one
  draw of items shared by every model and method, and by every task asking about the same items
  (the world's countries; `Inputs.items`, `evidence.declare_items`);
- claim 3: the expected difference of swap distances on a test set of this size, both rankings
  resampled alike, the percentile interval shifted by the bootstrap's bias;
- claim 4's near-zero share: the same bootstrap, each unit's share drawn from its exact
  (Clopper-Pearson) confidence distribution (0 of 60 is not surely below 0.05: its exact upper
  bound is 0.060);
- claim 4's tie-breaks: not a sampling interval but the 95% range of the distance under
  uniformly random tie-breaks of this run's scores (an exact randomisation).

Computed, never written by hand: `softeval claims` from the score files.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from softeval.analysis.evidence import (
    COLLAPSE_ENTROPY,
    EQUIVALENCE_LEVEL,
    FORMAT_SATURATED,
    KNOWLEDGE_FLAT,
    LEVEL,
    NON_INFERIORITY,
    SIGNIFICANCE,
    Interval,
    MetricReader,
    absolute_gap_difference,
    bias_shifted_interval,
    choice_spread,
    equivalent,
    exact_upper,
    holm_outcomes,
    near_zero_share,
    paired_bootstrap,
    paired_counts,
    percentile_interval,
    shared_items,
    task_resamples,
)
from softeval.analysis.publish import write_table
from softeval.analysis.ranking import bootstrap_swap_distances, swap_distances_of_scores
from softeval.analysis.tables import (
    ALL_TASKS,
    BASELINES,
    base_only_models,
    methods_in,
    ranking_not_applicable,
    twinned_models,
    unit_rows,
)
from softeval.io import atomic_write_text
from softeval.registry import Registry
from softeval.settings import AnalysisSettings

HOLDS, NOT_SHOWN, REFUTED, NOT_APPLICABLE = "holds", "not shown", "refuted", "not applicable"
VERDICTS = (HOLDS, NOT_SHOWN, REFUTED, NOT_APPLICABLE)
LABEL = {"zero_shot": "zero-shot", "few_shot": "few-shot", "soft_prompt": "soft prompt"}

ClaimCheck = Callable[["Inputs"], list["Part"]]
# (model, task, method, step) of a base model -> (the option each test example chose, options per question)
ChoiceReader = Callable[[str, str, str, int | None], tuple[list[int], int]]


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
            "verdict": self.verdict + (f" ({self.caveat})" if self.caveat else ""),
            "estimate": np.nan if iv is None else iv.estimate,
            "ci_low": np.nan if iv is None else iv.low,
            "ci_high": np.nan if iv is None else iv.high,
            "evidence": self.evidence,
        }


@dataclass
class Inputs:
    """What the claims are computed from."""

    summary: pd.DataFrame
    swap: pd.DataFrame
    read: MetricReader
    closed_tasks: set[str]
    settings: AnalysisSettings
    choices: ChoiceReader | None = None
    # task -> the item (the world's country) each test example asks about, in test order: tasks
    # asking about the same items are resampled by one draw of them (evidence.declare_items); None:
    # each task by its own examples
    items: Mapping[str, Sequence[str]] | None = None
    models: list[str] = field(init=False)
    twinned: list[str] = field(init=False)  # the models with a post-trained twin
    base_only: list[str] = field(init=False)  # the models without one
    tasks: list[str] = field(init=False)
    roles: set[str] = field(init=False)
    methods: list[str] = field(init=False)

    def __post_init__(self) -> None:
        self.models = sorted(set(self.summary["model"]))
        self.twinned = twinned_models(self.summary)
        self.base_only = base_only_models(self.summary)
        self.tasks = sorted(set(self.summary["task"]))
        self.roles = set(self.summary["role"])
        self.methods = methods_in(self.summary)

    def step(self, method: str) -> int | None:
        return self.settings.final_step if method == "soft_prompt" else None

    def values(self, role: str, model: str, task: str, method: str, step: int | None, metric: str) -> np.ndarray:
        return self.read((role, model, task, method, step), metric)

    def baselines(self) -> list[str]:
        return [m for m in BASELINES if m in self.methods]

    def without_twin(self, claim: int) -> list[Part]:
        """The part that names the models a post-trained comparison leaves out (none: no part)."""
        if not self.base_only or not self.twinned:
            return []
        return [
            Part(
                claim,
                "models without a post-trained twin",
                NOT_APPLICABLE,
                f"no post-trained twin: {', '.join(self.base_only)}",
                caveat=SCOPE_NOTE,
            )
        ]


@dataclass(frozen=True)
class Need:
    """Something a claim needs the run to have; without it the claim is not applicable."""

    met: Callable[[Inputs], bool]
    reason: str  # why the claim is not applicable, in the claims table


NEEDS: dict[str, Need] = {
    "soft_prompt": Need(lambda inputs: "soft_prompt" in inputs.methods, "no soft-prompt units in this run"),
    "baselines": Need(lambda inputs: bool(inputs.baselines()), "no zero-shot or few-shot units to compare with"),
}


@dataclass(frozen=True)
class Claim:
    """One claim of the paper: its statement, what the run needs for it, and its check (one Part per part)."""

    number: int
    statement: str
    needs: tuple[str, ...]
    check: Callable[[Inputs], list[Part]]

    @property
    def title(self) -> str:
        return self.statement.split(":")[0]


CLAIMS: Registry[Claim] = Registry("claim", "softeval.analysis.claims.CLAIMS")


def claim(number: int, statement: str, needs: tuple[str, ...] = ("soft_prompt",)) -> Callable[[ClaimCheck], ClaimCheck]:
    """Decorator on a check function: registers it as claim `number` (numbers are the paper's)."""
    unknown = [need for need in needs if need not in NEEDS]
    if unknown:
        raise ValueError(f"claim {number}: unknown need {unknown[0]!r}; one of {', '.join(NEEDS)}")

    def add(check: ClaimCheck) -> ClaimCheck:
        CLAIMS.add(str(number), Claim(number, statement, needs, check))
        return check

    return add


def check_claims(inputs: Inputs) -> pd.DataFrame:
    """One row per part of each claim: verdict, estimate, interval and the evidence in words; a
    part's "refuted" stands only where Holm's correction over its claim's tested parts keeps it."""
    parts: list[Part] = []
    with shared_items(inputs.items or {}):
        for item in CLAIMS.values():
            missing = next((NEEDS[need] for need in item.needs if not NEEDS[need].met(inputs)), None)
            if missing:
                parts.append(Part(item.number, "all", NOT_APPLICABLE, missing.reason))
            else:
                parts += holm_refutations(item.check(inputs))
    parts = [replace(p, evidence=p.evidence + fragile_note(p)) for p in parts]
    table = pd.DataFrame([p.row() for p in parts])
    # what claims.md prints under each part (not a column of claims.csv): its inputs, interval, review line
    table.attrs["sources"] = {(p.claim, p.part): part_sources(inputs, p) for p in parts}
    table.attrs["settings"] = inputs.settings
    return table


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
    """Each claim's verdict from its parts' (caveats dropped, scope notes left out)."""
    note = f"{NOT_APPLICABLE} ({SCOPE_NOTE})"
    return {
        int(claim): combine([v.split(" (")[0] for v in group["verdict"] if v != note] or [NOT_APPLICABLE])
        for claim, group in parts.groupby("claim", sort=True)
    }


def flat_text(change: Interval, margin: float = KNOWLEDGE_FLAT) -> str:
    """The equivalence test in words: the 90% interval the two one-sided tests read."""
    low, high = change.bounds(EQUIVALENCE_LEVEL) if change.draws is not None else (change.low, change.high)
    level = EQUIVALENCE_LEVEL if change.draws is not None else LEVEL
    return f"flat: the {level:.0%} interval [{low:+.3f}, {high:+.3f}] within ±{margin} (two one-sided tests at 5%)"


# ---- 1: format without knowledge --------------------------------------------------------------


@claim(
    1,
    "Format without knowledge: under soft-prompt tuning, format accuracy climbs to 90-100% while "
    "knowledge accuracy stays flat; closed tasks saturate first (the paper: about step 40), open tasks later "
    "(about step 80)",
    needs=("soft_prompt",),
)
def claim_format_without_knowledge(inputs: Inputs) -> list[Part]:
    settings, parts = inputs.settings, []
    first, final = settings.first_step, settings.final_step
    soft = inputs.summary[(inputs.summary["role"] == "base") & (inputs.summary["method"] == "soft_prompt")]
    steps = sorted({int(s) for s in soft["step"].dropna()})
    curves: dict[str, FormatCurve] = {}
    for kind in ("closed", "open"):
        tasks = [t for t in inputs.tasks if (t in inputs.closed_tasks) == (kind == "closed")]
        if not tasks:
            parts.append(Part(1, f"{kind} tasks", NOT_APPLICABLE, f"no {kind} tasks in this run"))
            continue
        if first == final:
            parts.append(Part(1, f"{kind} tasks", NOT_APPLICABLE, "one soft-prompt snapshot: no change to measure"))
            continue
        curve = []
        for step in steps:
            rows = unit_rows(inputs.summary, "base", "soft_prompt", step)
            rows = rows[rows["task"].isin(tasks)]
            curve.append((step, float(rows["format"].mean()), float(rows["knowledge"].mean())))
        units = [(m, t) for t in tasks for m in inputs.models]
        unit_tasks = [t for _, t in units]
        curves[kind] = saturation_draws(inputs, units, steps)

        def pairs(metric: str, units: list = units) -> list:
            return [
                (
                    inputs.values("base", m, t, "soft_prompt", final, metric),
                    inputs.values("base", m, t, "soft_prompt", first, metric),
                )
                for m, t in units
            ]

        def bootstrap(pairs: list, unit_tasks: list = unit_tasks) -> Interval:
            return paired_bootstrap(pairs, None, settings.bootstrap, settings.seed, unit_tasks)

        fmt_change = bootstrap(pairs("format"))
        start = next(f for s, f, _ in curve if s == first)
        along = "; ".join(f"step {s}: format {f:.3f}, knowledge {k:.3f}" for s, f, k in curve)
        if start >= FORMAT_SATURATED:  # nothing to climb: the claim cannot be seen; a significant drop refutes
            rise = REFUTED if less(fmt_change) == HOLDS else NOT_SHOWN
            why = (
                f"already formatted at step {first} (format {start:.3f} >= {FORMAT_SATURATED}): nothing to climb, "
                "so no climb to see (the claim needs one)"
            )
        else:
            rise, why = greater(fmt_change), f"format {start:.3f} at step {first}"
        parts.append(
            Part(
                1,
                f"{kind} tasks: format climbs",
                rise,
                f"{len(tasks)} {kind} task(s) x {len(inputs.models)} base models; {along}; {why}; change from "
                f"step {first} to {final} {fmt_change}",
                fmt_change,
                test=Test(GREATER),
            )
        )
        # The level the paper names (90-100%), with its interval: the mean final format minus the threshold.
        fmt_level = bootstrap(
            [(final_fmt, np.full_like(final_fmt, FORMAT_SATURATED)) for final_fmt, _ in pairs("format")]
        )
        parts.append(
            Part(
                1,
                f"{kind} tasks: format reaches >= {FORMAT_SATURATED}",
                greater(fmt_level),
                f"final format minus {FORMAT_SATURATED} {fmt_level}; first >= {FORMAT_SATURATED} at step "
                f"{_never(curves[kind].first_at(), final)}",
                fmt_level,
                test=Test(GREATER),
            )
        )
        know_change = bootstrap(pairs("knowledge"))
        know_verdict, caveat = within(know_change, KNOWLEDGE_FLAT), ""
        evidence = (
            f"knowledge change from step {first} to {final}: pooled {know_change}; "
            f"{moved_units(pairs('knowledge'))}; {flat_text(know_change)}"
        )
        if kind == "closed" and inputs.choices is not None:
            collapsed = []
            for m, t in units:
                spread = choice_spread(*inputs.choices(m, t, "soft_prompt", final))
                if spread.entropy < COLLAPSE_ENTROPY:
                    before = choice_spread(*inputs.choices(m, t, "soft_prompt", first))
                    origin = (
                        f"already at step {first}: the model's bias, not the prompt's"
                        if before.entropy < COLLAPSE_ENTROPY
                        else f"entropy {before.entropy:.2f} at step {first}"
                    )
                    share = f"{spread.top_letter} {spread.top_share:.0%}"
                    collapsed.append(f"{m}/{t} ({share}, entropy {spread.entropy:.2f}; {origin})")
            evidence += (
                f"; choices collapsed onto one option (normalised entropy < {COLLAPSE_ENTROPY}) in "
                f"{len(collapsed)} of {len(units)} units" + (": " + ", ".join(collapsed) if collapsed else "")
            )
            if collapsed and know_verdict == HOLDS:
                know_verdict, caveat = NOT_SHOWN, "flat only because choices collapsed"
        parts.append(
            Part(
                1,
                f"{kind} tasks: knowledge flat",
                know_verdict,
                evidence,
                know_change,
                caveat,
                Test(WITHIN, KNOWLEDGE_FLAT),
            )
        )
    if "closed" in curves and "open" in curves:
        parts.append(saturation_order(curves, final))
    return parts


def moved_units(pairs: list[tuple[np.ndarray, np.ndarray]]) -> str:
    """How many units moved significantly either way inside a pooled change: each unit's (final,
    first) per-example 0/1 arrays tested alone (exact McNemar p < SIGNIFICANCE, as unit_checks),
    and how many of them survive Holm's correction over the units."""
    tests = [paired_counts(final, first) for final, first in pairs]
    down = sum(t.p_value < SIGNIFICANCE and t.only_second > t.only_first for t in tests)
    up = sum(t.p_value < SIGNIFICANCE and t.only_first > t.only_second for t in tests)
    holm = sum(o != "within noise" for o in holm_outcomes(tests))
    return (
        f"{down + up} of {len(tests)} units moved significantly ({down} down, {up} up; exact McNemar "
        f"p < {SIGNIFICANCE} per unit; {holm} after Holm over the {len(tests)} units)"
    )


# The paper's saturation steps (format >= 90%): about 40 on closed tasks, about 80 on open ones.
PAPER_SATURATION = {"closed": 40, "open": 80}


@dataclass(frozen=True)
class FormatCurve:
    """Mean format over a kind's units at each snapshot: on the data and per bootstrap resample."""

    steps: list[int]
    level: np.ndarray  # steps
    draws: np.ndarray  # steps x resamples

    def first_at(self) -> int:
        """First snapshot at or above FORMAT_SATURATED; one past the last when never."""
        reached = [s for s, f in zip(self.steps, self.level, strict=True) if f >= FORMAT_SATURATED - 1e-12]
        return reached[0] if reached else self.steps[-1] + 1

    def shortfall(self, curve: np.ndarray) -> np.ndarray:
        """How far below FORMAT_SATURATED format stays, averaged over the snapshots: 0 when
        formatted throughout; smaller for a curve that saturates sooner."""
        return np.maximum(0.0, FORMAT_SATURATED - curve).mean(axis=0)


def saturation_draws(inputs: Inputs, units: list[tuple[str, str]], steps: list[int]) -> FormatCurve:
    """The format curve of `units` (base models' soft prompts), resampled with every task's own
    index matrix, as everywhere."""
    settings = inputs.settings
    level = np.zeros(len(steps))
    draws = np.zeros((len(steps), settings.bootstrap))
    for m, t in units:
        for k, step in enumerate(steps):
            values = inputs.values("base", m, t, "soft_prompt", step, "format")
            index = task_resamples(t, len(values), settings.bootstrap, settings.seed)
            level[k] += values.mean() / len(units)
            draws[k] += values[index].mean(axis=1) / len(units)
    return FormatCurve(steps, level, draws)


def saturation_order(curves: dict[str, FormatCurve], final: int) -> Part:
    """Closed tasks saturate first: their format stays less far below the level than open tasks'
    over the snapshots (open shortfall minus closed shortfall above 0, paired bootstrap). A first
    crossing at a few snapshots has no interval that covers (it jumps from snapshot to snapshot),
    so the steps are reported against the paper's, and the verdict is the shortfall's."""
    closed, open_ = curves["closed"], curves["open"]
    estimate = float(open_.shortfall(open_.level[:, None])[0] - closed.shortfall(closed.level[:, None])[0])
    order = percentile_interval(estimate, open_.shortfall(open_.draws) - closed.shortfall(closed.draws))
    where = ", ".join(
        f"{kind} tasks at step {_never(curves[kind].first_at(), final)} (the paper: about {PAPER_SATURATION[kind]})"
        for kind in ("closed", "open")
    )
    if closed.first_at() == open_.first_at() == closed.steps[0]:
        verdict, why = NOT_SHOWN, "both formatted from the first snapshot: no order to see (the claim needs one)"
    else:
        verdict = greater(order)
        why = f"open minus closed shortfall below {FORMAT_SATURATED}, mean over snapshots, {order}"
    return Part(
        1,
        "closed tasks saturate before open tasks",
        verdict,
        f"format first >= {FORMAT_SATURATED}: {where}; {why} (snapshots {', '.join(map(str, closed.steps))})",
        None if why.startswith("both formatted") else order,
        test=Test(GREATER),
    )


def _never(step: int, final: int) -> str:
    return "never" if step > final else str(step)


# ---- 2: soft prompting beats the baselines ----------------------------------------------------


@claim(
    2,
    "Soft prompting beats zero-shot and few-shot on base models, and on post-trained models too",
    needs=("soft_prompt", "baselines"),
)
def claim_beats_baselines(inputs: Inputs) -> list[Part]:
    settings, parts = inputs.settings, []
    for role in ("base", "post"):
        who = "base" if role == "base" else "post-trained"
        if role not in inputs.roles:
            parts.append(Part(2, f"{who} models", NOT_APPLICABLE, f"no {who} models in this run"))
            continue
        models = inputs.models if role == "base" else inputs.twinned
        for baseline in inputs.baselines():
            units = [(m, t) for t in inputs.tasks for m in models]
            strict = [
                (
                    inputs.values(role, m, t, "soft_prompt", settings.final_step, settings.metric),
                    inputs.values(role, m, t, baseline, None, settings.metric),
                )
                for m, t in units
            ]
            unit_tasks = [t for _, t in units]
            gain = paired_bootstrap(strict, None, settings.bootstrap, settings.seed, unit_tasks)
            outcomes = holm_outcomes([paired_counts(a, b) for a, b in strict])
            knowledge = paired_bootstrap(
                [
                    (
                        inputs.values(role, m, t, "soft_prompt", settings.final_step, "knowledge"),
                        inputs.values(role, m, t, baseline, None, "knowledge"),
                    )
                    for m, t in units
                ],
                None,
                settings.bootstrap,
                settings.seed,
                unit_tasks,
            )
            verdict = greater(gain)
            caveat = "knowledge lost" if verdict == HOLDS and less(knowledge) == HOLDS else ""
            parts.append(
                Part(
                    2,
                    f"{who} models vs {LABEL[baseline]}",
                    verdict,
                    f"{settings.metric} soft prompt minus {LABEL[baseline]} {gain} over {len(units)} units; "
                    f"per unit (exact McNemar, Holm over the {len(units)} units at {SIGNIFICANCE}): soft prompt "
                    f"better in {outcomes.count('first better')}, {LABEL[baseline]} better in "
                    f"{outcomes.count('second better')}, within noise in {outcomes.count('within noise')}; "
                    f"knowledge soft prompt minus {LABEL[baseline]} {knowledge}",
                    gain,
                    caveat,
                    Test(GREATER),
                )
            )
    return parts + inputs.without_twin(2)


# ---- 3: rankings ------------------------------------------------------------------------------


def _ranking_not_applicable(inputs: Inputs, claim: int) -> Part | None:
    """Rankings compare the models with a post-trained twin: not applicable with fewer than two."""
    reason = ranking_not_applicable(inputs.summary)
    return None if reason is None else Part(claim, "all", NOT_APPLICABLE, reason)


def swap_draws(inputs: Inputs, method: str) -> np.ndarray:
    """Bootstrap draws of the swap distance to the post-trained ranking, summed over tasks: base and
    post-trained scores resampled alike (every task's own index matrix, shared by all methods:
    the same draws as the swap table's)."""
    settings, total = inputs.settings, 0
    for task in inputs.tasks:
        reference = reference_examples(inputs, task)
        per_example = {
            m: inputs.values("base", m, task, method, inputs.step(method), settings.metric) for m in inputs.twinned
        }
        index = task_resamples(task, len(reference[inputs.twinned[0]]), settings.bootstrap, settings.seed)
        total = total + bootstrap_swap_distances(per_example, reference, index)
    return np.asarray(total)


def reference_examples(inputs: Inputs, task: str) -> dict[str, np.ndarray]:
    """Per-example scores of the post-trained models under the reference method: the ranking compared with."""
    method = inputs.settings.reference_method
    return {
        m: inputs.values("post", m, task, method, inputs.step(method), inputs.settings.metric) for m in inputs.twinned
    }


@claim(
    3,
    "Soft-prompted base rankings predict post-trained rankings: smaller swap distance to the post-trained "
    "ranking than zero-shot and few-shot",
    needs=("soft_prompt", "baselines"),
)
def claim_predicts_rankings(inputs: Inputs) -> list[Part]:
    missing = _ranking_not_applicable(inputs, 3)
    if missing:
        return [missing]
    totals = inputs.swap[inputs.swap["task"] == ALL_TASKS].set_index("method")
    sp_draws, parts = swap_draws(inputs, "soft_prompt"), []
    sp = totals.loc["soft_prompt"]
    for baseline in inputs.baselines():
        b = totals.loc[baseline]
        diff = bias_shifted_interval(float(sp["distance"] - b["distance"]), sp_draws - swap_draws(inputs, baseline))
        robust = "smaller at every tie-break" if sp["distance_max"] < b["distance_min"] else "the tie ranges overlap"
        evidence = (
            f"swap distance to the post-trained ranking summed over {len(inputs.tasks)} task(s): soft prompt "
            f"{int(sp['distance'])} (approximate 95% interval {sp['ci_low']:.1f}-{sp['ci_high']:.1f}, tie range "
            f"{int(sp['distance_min'])}-{int(sp['distance_max'])}), {LABEL[baseline]} {int(b['distance'])} "
            f"({b['ci_low']:.1f}-{b['ci_high']:.1f}, tie range {int(b['distance_min'])}-{int(b['distance_max'])}); "
            f"difference {diff} (the expected difference on a test set of this size: both rankings resampled "
            f"from the same test examples, bias-shifted percentile bootstrap); {robust}"
        )
        if "truth_distance" in totals.columns:
            evidence += (
                f"; to the zoo's true knowledge ranking: soft prompt {int(sp['truth_distance'])}, "
                f"{LABEL[baseline]} {int(b['truth_distance'])}"
            )
        parts.append(Part(3, f"vs {LABEL[baseline]}", less(diff), evidence, diff, test=Test(LESS)))
    return parts + inputs.without_twin(3)


# ---- 4: score compression ---------------------------------------------------------------------

# A base model's unit "near zero": mean score below this (the paper's compressed zero-shot scores).
NEAR_ZERO = 0.05


def tie_dependence(base: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """How many swaps the alphabetical tie-break saves against a random one, per row of two
    (rows x models) score matrices (models in name order): the expected swap distance under
    uniformly random tie-breaks of the base scores minus the alphabetical one. Each base-tied
    pair is discordant with probability 1/2 at random; alphabetically it is concordant (+1/2)
    or discordant (-1/2) by how the reference orders it. 0 when nothing is tied."""
    base, reference = np.atleast_2d(base), np.atleast_2d(reference)
    upper = np.triu(np.ones((base.shape[1],) * 2, dtype=bool), k=1)
    tied = (base[:, :, None] == base[:, None, :]) & upper
    reference_agrees = reference[:, :, None] >= reference[:, None, :]  # the alphabetical order: i above j
    return 0.5 * ((tied & reference_agrees).sum(axis=(1, 2)) - (tied & ~reference_agrees).sum(axis=(1, 2)))


def near_zero_draws(inputs: Inputs, method: str) -> tuple[float, np.ndarray, np.ndarray]:
    """Share of base units (model x task) whose mean score is below NEAR_ZERO: on the data, and per
    resample (the shared draw of items) a lower and an upper draw that carry each unit's exact
    binomial uncertainty (`evidence.near_zero_share`); the ranked models' (with a twin)."""
    settings = inputs.settings
    units = [(m, t) for t in inputs.tasks for m in inputs.twinned]
    values = [inputs.values("base", m, t, method, inputs.step(method), settings.metric) for m, t in units]
    return near_zero_share(values, NEAR_ZERO, settings.bootstrap, settings.seed, [t for _, t in units], method)


def near_zero_units(inputs: Inputs, method: str) -> list[str]:
    """The base units below NEAR_ZERO, each with its exact 95% upper bound, for the evidence."""
    out = []
    for t in inputs.tasks:
        for m in inputs.twinned:
            values = inputs.values("base", m, t, method, inputs.step(method), inputs.settings.metric)
            if values.mean() < NEAR_ZERO:
                k = round(float(values.sum()))
                out.append(f"{m}/{t} {k}/{len(values)} (exact upper {exact_upper(k, len(values)):.3f})")
    return out


def random_tie_break_savings(inputs: Inputs, method: str) -> tuple[int, float, np.ndarray]:
    """The base ranking's swap distance to the post-trained one with alphabetical tie-breaks,
    summed over tasks, and how much larger it is under each of `bootstrap` uniformly random
    tie-breaks of the same scores (ties broken by a random jitter smaller than any gap; the
    post-trained ranking keeps the paper's alphabetical policy). An exact randomisation of this
    run's scores, not a resampling of test examples. Also the exact expectation of the savings
    (tie_dependence)."""
    settings, models = inputs.settings, inputs.twinned  # name order: the alphabetical tie-break
    alphabetical, expected, savings = 0, 0.0, np.zeros(settings.bootstrap)
    for task in inputs.tasks:
        reference = reference_examples(inputs, task)
        base = np.array(
            [inputs.values("base", m, task, method, inputs.step(method), settings.metric).mean() for m in models]
        )
        post = np.array([[reference[m].mean() for m in models]])
        gaps = np.diff(np.unique(base))
        jitter = (gaps.min() / 2 if len(gaps) else 1.0) * np.random.default_rng(
            [settings.seed, zlib.crc32(f"{task}/{method}".encode())]
        ).random((settings.bootstrap, len(models)))
        observed = int(swap_distances_of_scores(base[None, :], post)[0])
        alphabetical += observed
        expected += float(tie_dependence(base[None, :], post)[0])
        savings += (
            swap_distances_of_scores(base[None, :] + jitter, np.repeat(post, settings.bootstrap, axis=0)) - observed
        )
    return alphabetical, expected, savings


@claim(
    4,
    "Agreement under zero- and few-shot is largely an artifact of score compression: compressed scores leave "
    "the ranking to tie-breaks; soft prompting lifts scores so that rankings are decided by scores",
    needs=("soft_prompt", "baselines"),
)
def claim_score_compression(inputs: Inputs) -> list[Part]:
    missing = _ranking_not_applicable(inputs, 4)
    if missing:
        return [missing]
    totals = inputs.swap[inputs.swap["task"] == ALL_TASKS].set_index("method")
    metric = inputs.settings.metric
    sp_share, sp_lower, sp_upper = near_zero_draws(inputs, "soft_prompt")
    parts = []
    for baseline in inputs.baselines():
        share, lower, upper = near_zero_draws(inputs, baseline)
        # the difference's lower end from the baseline's lower draws against the soft prompt's upper
        # ones, and the other way round: each side as uncertain as its exact bounds say
        low, high = float(np.percentile(lower - sp_upper, 2.5)), float(np.percentile(upper - sp_lower, 97.5))
        near = Interval(share - sp_share, low, high)
        below = near_zero_units(inputs, baseline)
        parts.append(
            Part(
                4,
                f"{LABEL[baseline]}: more near-zero scores than the soft prompt",
                greater(near),
                f"share of base units (model x task) with mean {metric} < {NEAR_ZERO} over "
                f"{len(inputs.twinned) * len(inputs.tasks)} base units: {LABEL[baseline]} "
                f"{share:.2f}, soft prompt {sp_share:.2f}; difference {near} (paired bootstrap of the items, "
                f"each unit's share drawn from its exact binomial confidence distribution: a unit counts as "
                f"surely below {NEAR_ZERO} only where its exact upper bound is)"
                + (f"; {LABEL[baseline]} units below {NEAR_ZERO}: {', '.join(below)}" if below else ""),
                near,
                test=Test(GREATER, draws=upper - sp_lower),
            )
        )
        row = totals.loc[baseline]
        alphabetical, expected, savings = random_tie_break_savings(inputs, baseline)
        saved = percentile_interval(expected, savings)
        parts.append(
            Part(
                4,
                f"{LABEL[baseline]}: agreement owed to tie-breaks",
                greater(saved),
                f"swap distance {alphabetical} with alphabetical tie-breaks, {alphabetical + expected:.1f} "
                f"expected under random tie-breaks of the same scores (tie range {int(row['distance_min'])}-"
                f"{int(row['distance_max'])}): random tie-breaks add {saved} swaps (95% range over "
                f"{len(savings)} random tie-breaks; holds when even the 2.5th percentile adds some)",
                saved,
                test=Test(GREATER),
            )
        )
    return parts + inputs.without_twin(4)


# ---- 5: score gap -----------------------------------------------------------------------------


@claim(
    5,
    "The score gap between base and post-trained models is smallest under soft prompting",
    needs=("soft_prompt", "baselines"),
)
def claim_smallest_gap(inputs: Inputs) -> list[Part]:
    if not inputs.twinned:
        return [Part(5, "all", NOT_APPLICABLE, "no post-trained models: no score gap")]
    settings, parts = inputs.settings, []
    units = [(m, t) for t in inputs.tasks for m in inputs.twinned]

    def arrays(method: str) -> list[tuple[np.ndarray, np.ndarray]]:
        step = inputs.step(method)
        return [
            (
                inputs.values("base", m, t, method, step, settings.metric),
                inputs.values("post", m, t, method, step, settings.metric),
            )
            for m, t in units
        ]

    def differing(pairs: list) -> int:
        return sum(o != "within noise" for o in holm_outcomes([paired_counts(b, p) for b, p in pairs]))

    sp = arrays("soft_prompt")
    sp_gap = float(np.mean([abs(p.mean() - b.mean()) for b, p in sp]))
    for baseline in inputs.baselines():
        other = arrays(baseline)
        diff = absolute_gap_difference(
            [(b1, p1, b2, p2) for (b1, p1), (b2, p2) in zip(sp, other, strict=True)],
            settings.bootstrap,
            settings.seed,
            [t for _, t in units],
        )
        gap = float(np.mean([abs(p.mean() - b.mean()) for b, p in other]))
        parts.append(
            Part(
                5,
                f"vs {LABEL[baseline]}",
                less(diff),
                f"mean |post - base| {settings.metric} over {len(units)} units: soft prompt {sp_gap:.3f}, "
                f"{LABEL[baseline]} {gap:.3f}; difference {diff} (paired bootstrap); base and post-trained twin "
                f"differ significantly (exact McNemar, Holm over the {len(units)} units at {SIGNIFICANCE}) in "
                f"{differing(sp)} units under the soft prompt, {differing(other)} under {LABEL[baseline]}",
                diff,
                test=Test(LESS),
            )
        )
        # a gap closed by pulling scores down is no evidence for the claim: the soft prompt's scores
        # must not be below the baseline's (non-inferiority), base and post-trained alike
        for side, role in enumerate(("base", "post-trained")):  # (base, post) per unit
            scores = paired_bootstrap(
                [(a[side], b[side]) for a, b in zip(sp, other, strict=True)],
                None,
                settings.bootstrap,
                settings.seed,
                [t for _, t in units],
            )
            parts.append(
                Part(
                    5,
                    f"vs {LABEL[baseline]}: soft prompt not below it ({role} models)",
                    greater(scores, -NON_INFERIORITY),
                    f"{settings.metric} soft prompt minus {LABEL[baseline]} over the {len(units)} {role} units "
                    f"{scores} (paired bootstrap); not below: the interval's lower end above -{NON_INFERIORITY} "
                    f"(non-inferiority margin), so that the gap's reduction does not come from lower scores",
                    scores,
                    test=Test(GREATER, -NON_INFERIORITY),
                )
            )
    return parts + inputs.without_twin(5)


# ---- writing ----------------------------------------------------------------------------------


def truth_note(swap: pd.DataFrame) -> str | None:
    """For the embedded zoo: the base rankings' distance to the true knowledge ranking."""
    if "truth_distance" not in swap.columns:
        return None
    totals = swap[swap["task"] == ALL_TASKS].set_index("method")["truth_distance"]
    per_task = swap[swap["task"] != ALL_TASKS]
    return (
        "Swap distance of the base ranking to the true knowledge ranking (the zoo's cloze probe), summed "
        "over tasks: "
        + ", ".join(f"{LABEL.get(m, m)} {int(v)}" for m, v in totals.items())
        + ". Per task: "
        + "; ".join(
            f"{task}: " + ", ".join(f"{LABEL.get(r.method, r.method)} {int(r.truth_distance)}" for r in g.itertuples())
            for task, g in per_task.groupby("task")
        )
        + "."
    )


# A bound this close to its decision line decides a verdict another bootstrap seed could flip.
FRAGILE = 0.005
SCORES = "results/scores"  # where claims.md says the per-example files are (the claims job's --scores-root)
METHOD_OF = {label: method for method, label in LABEL.items()}


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


def score_file(role: str, method: str, step: int | None, model: str = "<model>", task: str = "<task>") -> str:
    """The per-example scores file of a unit, as claims.md names it."""
    name = f"soft_prompt/step{step}" if method == "soft_prompt" else method
    return f"{SCORES}/{model}/{role}/{task}/{name}.jsonl"


def review_line(
    model: str,
    task: str,
    method: str,
    step: int | None,
    role: str = "base",
    vs: str | None = None,
    vs_step: int | None = None,
    metric: str | None = None,
    flag: str = "",
) -> str:
    """The `softeval review` command that shows the examples behind a comparison."""
    words = ["softeval review", f"--model {model}"] + ([f"--role {role}"] if role != "base" else [])
    words += [f"--task {task}", f"--method {method}"] + ([f"--step {step}"] if step is not None else [])
    words += [f"--vs {vs}"] if vs else []
    words += [f"--vs-step {vs_step}"] if vs_step is not None else []
    words += [f"--metric {metric}"] if metric else []
    words += [flag] if flag else []
    return "`" + " ".join(words) + "`"


def part_sources(inputs: Inputs, part: Part) -> list[str]:
    """What claims.md says under a part: the files it read (with the step), the interval's kind
    with its draws and seed, and a `softeval review` line showing the examples behind it."""
    if part.interval is None and part.test is None:
        return []
    settings = inputs.settings
    first, final, metric = settings.first_step, settings.final_step, settings.metric
    draws = f"{settings.bootstrap} draws, seed {settings.seed}"
    bootstrap = (
        f"interval: paired percentile bootstrap over test items ({draws}; one draw of items shared by every "
        "model, method and task asking about the same items)"
    )
    name, number = part.part, part.claim

    def over(models: list[str], tasks: list[str]) -> str:
        return f"for <model> in {', '.join(models)} and <task> in {', '.join(tasks)}"

    if number == 1:
        kind = name.split(" tasks")[0]
        if name.startswith("closed tasks saturate"):
            steps = sorted({int(s) for s in inputs.summary[inputs.summary["method"] == "soft_prompt"]["step"].dropna()})
            return [
                f"inputs: format of {SCORES}/<model>/base/<task>/soft_prompt/step<N>.jsonl "
                f"for N in {', '.join(map(str, steps))}, every base model and task (closed: "
                f"{', '.join(sorted(inputs.closed_tasks & set(inputs.tasks))) or 'none'})",
                f"{bootstrap}; the mean shortfall below {FORMAT_SATURATED} over the snapshots, open minus closed",
                "review: "
                + review_line(
                    inputs.models[0], inputs.tasks[0], "soft_prompt", first, "base", "soft_prompt", final, "format"
                ),
            ]
        tasks = [t for t in inputs.tasks if (t in inputs.closed_tasks) == (kind == "closed")]
        what = "format" if "format" in name else "knowledge"
        sources = (
            f"{score_file('base', 'soft_prompt', first)} ({what})"
            if "format reaches" not in name
            else f"{FORMAT_SATURATED} as the second column"
        )
        lines = [
            f"inputs: {what} of {score_file('base', 'soft_prompt', final)} minus {sources}, "
            f"{over(inputs.models, tasks)}; step {first} is the soft prompt before tuning (its initialisation), "
            "not the model without a prompt (that is zero_shot.jsonl)",
            bootstrap + ("; the verdict reads its 90% interval (two one-sided tests)" if what == "knowledge" else ""),
        ]
        if "format reaches" in name:
            review = review_line(inputs.models[0], tasks[0], "soft_prompt", final, flag="--wrong-format")
        else:
            review = review_line(
                inputs.models[0], tasks[0], "soft_prompt", final, vs="soft_prompt", vs_step=first, metric=what
            )
        return [*lines, f"review: {review} (one per model and task)"]
    baseline = METHOD_OF.get(name.split(":")[0].removeprefix("vs ").split(" vs ")[-1])
    if baseline is None:
        return []
    twinned = inputs.twinned
    if number == 2:
        role = "base" if name.startswith("base") else "post"
        models = inputs.models if role == "base" else twinned
        return [
            f"inputs: {metric} and knowledge of {score_file(role, 'soft_prompt', final)} minus "
            f"{score_file(role, baseline, None)}, {over(models, inputs.tasks)}",
            bootstrap,
            f"review: {review_line(models[0], inputs.tasks[0], 'soft_prompt', final, role, baseline, metric=metric)}"
            " (one per model and task)",
        ]
    reference = settings.reference_method
    ref_file = score_file("post", reference, inputs.step(reference))
    if number == 3:
        return [
            f"inputs: {metric} of {score_file('base', 'soft_prompt', final)} and {score_file('base', baseline, None)} "
            f"ranked against the post-trained ranking by the reference method {reference} ({ref_file}), "
            f"{over(twinned, inputs.tasks)}; ties broken alphabetically",
            f"interval: bias-shifted percentile bootstrap of the swap-distance difference ({draws}; both rankings "
            "resampled from the same test items)",
            f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, vs=baseline, metric=metric)}",
        ]
    if number == 4:
        if "near-zero" in name:
            return [
                f"inputs: mean {metric} of {score_file('base', baseline, None)} and "
                f"{score_file('base', 'soft_prompt', final)}, {over(twinned, inputs.tasks)}; near zero: < {NEAR_ZERO}",
                f"interval: paired bootstrap over test items, each unit's share drawn from its exact binomial "
                f"confidence distribution ({draws})",
                f"review: {review_line(twinned[0], inputs.tasks[0], baseline, None, flag='--not-strict')}",
            ]
        return [
            f"inputs: mean {metric} of {score_file('base', baseline, None)} against the reference method "
            f"{reference} ({ref_file}), {over(twinned, inputs.tasks)}",
            f"interval: not a sampling interval: the 95% range over {settings.bootstrap} uniformly random "
            f"tie-breaks of this run's scores (seed {settings.seed}, one stream per task and method)",
            f"review: {review_line(twinned[0], inputs.tasks[0], baseline, None, vs=reference, metric=metric)}",
        ]
    if number == 5:
        roles = ["base"] if "(base models)" in name else ["post"] if "(post-trained" in name else ["base", "post"]
        files = " and ".join(
            f"{score_file(r, 'soft_prompt', final)} against {score_file(r, baseline, None)}" for r in roles
        )
        role = roles[-1]
        return [
            f"inputs: {metric} of {files}, {over(twinned, inputs.tasks)}",
            bootstrap,
            f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, role, baseline, metric=metric)}",
        ]
    return []


def published_verdicts(stability: object) -> set[str]:
    """The verdicts a published record gives a claim: from its runs' mapping, or from the quoted
    stability text ('not shown in 4 of 5 published runs; refuted in 1 of 5 published runs')."""
    if isinstance(stability, Mapping):
        return {str(v) for v in stability.values()}
    return {segment.split(" in ")[0].strip() for segment in str(stability).split(";") if segment.strip()}


# How claims.md reads its verdicts (results/README.md says the same).
CLAIMS_RULES = (
    "Each part: an estimate with its 95% interval. Means and their differences: paired bootstrap over test "
    "items, one draw of items shared by every model and method, and by every task that asks about the same "
    "items (the world's countries: a model that knows a country knows it in every task), so the items' "
    "common difficulty moves them together. Claim 3: the expected difference of swap distances on a test set "
    "of this size, both rankings resampled alike, corrected for the bootstrap's bias. Claim 4's near-zero "
    "share: each unit's share drawn from its exact binomial (Clopper-Pearson) confidence distribution as "
    "well, so 0 of 60 is not surely below 0.05 (its exact upper bound is 0.060). Claim 4's tie-breaks: the "
    "range over uniformly random tie-breaks of this run's scores. Per-unit McNemar counts are Holm-corrected "
    "over the units of a comparison. **holds**: the direction is the claimed one and the interval excludes "
    'the opposite ("flat": the 90% interval within ±0.05, the two one-sided tests at 5%; "not below": the '
    "lower end above -0.05); **refuted**: the interval lies on the opposite side at the level Holm's "
    "correction over the claim's tested parts leaves (one part: the 95% interval; k parts: the strongest at "
    "2.5% / k one-sided, step-down), so a claim of many parts is refuted by chance no more often than one of "
    "one part; **not shown**: otherwise, and where this run cannot test a part it needs (format at the level "
    "before tuning: no climb to see); **not applicable**: this run cannot test the claim at all. "
    "A claim holds when every part holds (a part that cannot be tested is never dropped: the claim is then "
    "not shown), and is refuted when a part is; a scope note (models without a post-trained twin) is no "
    "part. Claim 5's gap must close with soft-prompt scores not below the baseline's (non-inferiority, "
    "base and post-trained models)."
)


def write_claims(
    parts: pd.DataFrame,
    stem: Path,
    pilot: str = "",
    swap: pd.DataFrame | None = None,
    published: tuple[str, dict[int, str]] | None = None,
) -> None:
    """claims.{csv,tex}: one row per part; claims.md: each claim, its verdict and its evidence in prose.

    published: (where, claim -> its verdicts over the published runs), quoted under each claim: a
    verdict is a result only together with how stable it is over seeds.
    """
    write_table(
        parts,
        stem,
        "The paper's claims on this run, part by part: estimate and 95% interval (paired bootstrap over test "
        "items, one draw of items shared by every model and method and by every task asking about the same "
        "items; claim 4's near-zero share: each unit's share also drawn from its exact binomial confidence "
        "distribution; claim 4's tie-breaks: range over random tie-breaks); holds = direction right and "
        "interval excluding the opposite (flat: the 90% interval within the margin; not below: lower end above "
        "minus the margin), not shown = otherwise, or a part this run cannot test, refuted = interval wholly on "
        "the opposite side at the level Holm's correction over the claim's tested parts leaves" + pilot,
    )
    verdicts = claim_verdicts(parts)
    sources = parts.attrs.get("sources", {})
    lines = ["# The paper's claims, checked on this run", ""]
    if pilot:
        lines += [pilot.strip(), ""]
    lines += [
        CLAIMS_RULES,
        "",
    ]
    for item in CLAIMS.values():
        number = item.number
        lines += [f"## {number}. {item.title} — {verdicts.get(number, NOT_APPLICABLE)}", ""]
        lines += [f"*The paper:* {item.statement}.", ""]
        if published and number in published[1]:
            lines += [f"*Published ({published[0]}):* {published[1][number]}.", ""]
            verdict = verdicts.get(number, NOT_APPLICABLE)
            if verdict not in published_verdicts(published[1][number]):
                lines += [
                    f"*Outside the published record:* this run's verdict ({verdict}) is not among the published "
                    f"runs' verdicts for claim {number}; `softeval verify` reports it as a difference.",
                    "",
                ]
        for row in parts[parts["claim"] == number].itertuples():
            lines.append(f"- **{row.part}** — {row.verdict}. {row.evidence}.")
            lines += [f"  - {line}" for line in sources.get((number, row.part), [])]
        lines.append("")
    note = None if swap is None else truth_note(swap)
    if note:
        lines += ["## Ground truth", "", note, ""]
    lines += [
        "Computed by `softeval claims` from results/scores/<model>/<role>/<task>/<method>.jsonl, a soft prompt's "
        "at soft_prompt/step<N>.jsonl (per-example verdicts; `softeval review` shows them; each part above names "
        "its files and steps) and results/loglik (the options chosen on closed tasks). `softeval claims-explain N "
        "--results results` recomputes claim N's estimates from those files with pandas alone.",
        "",
    ]
    atomic_write_text(stem.with_suffix(".md"), "\n".join(lines))
