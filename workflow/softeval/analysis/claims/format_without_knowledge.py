"""Claim 1, format without knowledge: soft-prompt tuning lifts format to the paper's 90-100% while
knowledge stays flat, closed tasks saturating before open ones. Its parts: per kind of task, the
climb, the level reached and the flat knowledge (with the choice-collapse caveat on closed tasks),
and the saturation order."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from softeval.analysis.claims.framework import Inputs, claim
from softeval.analysis.claims.sources import SCORES, bootstrap_text, over, review_line, score_file
from softeval.analysis.claims.verdicts import (
    GREATER,
    HOLDS,
    NOT_APPLICABLE,
    NOT_SHOWN,
    REFUTED,
    WITHIN,
    Part,
    Test,
    flat_text,
    greater,
    less,
    within,
)
from softeval.analysis.evidence import (
    COLLAPSE_ENTROPY,
    FORMAT_SATURATED,
    KNOWLEDGE_FLAT,
    SIGNIFICANCE,
    Interval,
    choice_spread,
    holm_outcomes,
    paired_bootstrap,
    paired_counts,
    percentile_interval,
    task_resamples,
)
from softeval.analysis.tables import unit_rows
from softeval.names import BASE, SOFT_PROMPT


def format_sources(inputs: Inputs, part: Part) -> list[str]:
    """Claim 1's files (the soft prompt's snapshots, the step before tuning included), its
    intervals and a review line per part."""
    settings, name = inputs.settings, part.part
    first, final = settings.first_step, settings.final_step
    bootstrap = bootstrap_text(settings)
    kind = name.split(" tasks")[0]
    if name.startswith("closed tasks saturate"):
        steps = sorted({int(s) for s in inputs.summary[inputs.summary["method"] == SOFT_PROMPT]["step"].dropna()})
        return [
            f"inputs: format of {SCORES}/<model>/base/<task>/soft_prompt/step<N>.jsonl "
            f"for N in {', '.join(map(str, steps))}, every base model and task (closed: "
            f"{', '.join(sorted(inputs.closed_tasks & set(inputs.tasks))) or 'none'})",
            f"{bootstrap}; the mean shortfall below {FORMAT_SATURATED} over the snapshots, open minus closed",
            "review: "
            + review_line(inputs.models[0], inputs.tasks[0], SOFT_PROMPT, first, BASE, SOFT_PROMPT, final, "format"),
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
        review = review_line(inputs.models[0], tasks[0], SOFT_PROMPT, final, flag="--wrong-format")
    else:
        review = review_line(inputs.models[0], tasks[0], SOFT_PROMPT, final, vs=SOFT_PROMPT, vs_step=first, metric=what)
    return [*lines, f"review: {review} (one per model and task)"]


@claim(
    1,
    "Format without knowledge: under soft-prompt tuning, format accuracy climbs to 90-100% while "
    "knowledge accuracy stays flat; closed tasks saturate first (the paper: about step 40), open tasks later "
    "(about step 80)",
    needs=(SOFT_PROMPT,),
    sources=format_sources,
)
def claim_format_without_knowledge(inputs: Inputs) -> list[Part]:
    settings, parts = inputs.settings, []
    first, final = settings.first_step, settings.final_step
    soft = inputs.summary[(inputs.summary["role"] == BASE) & (inputs.summary["method"] == SOFT_PROMPT)]
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
            rows = unit_rows(inputs.summary, BASE, SOFT_PROMPT, step)
            rows = rows[rows["task"].isin(tasks)]
            curve.append((step, float(rows["format"].mean()), float(rows["knowledge"].mean())))
        units = [(m, t) for t in tasks for m in inputs.models]
        unit_tasks = [t for _, t in units]
        curves[kind] = saturation_draws(inputs, units, steps)

        def pairs(metric: str, units: list = units) -> list:
            return [
                (
                    inputs.values(BASE, m, t, SOFT_PROMPT, final, metric),
                    inputs.values(BASE, m, t, SOFT_PROMPT, first, metric),
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
                spread = choice_spread(*inputs.choices(m, t, SOFT_PROMPT, final))
                if spread.entropy < COLLAPSE_ENTROPY:
                    before = choice_spread(*inputs.choices(m, t, SOFT_PROMPT, first))
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
            values = inputs.values(BASE, m, t, SOFT_PROMPT, step, "format")
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
