"""Claim 5, the base/post-trained score gap is smallest under soft prompting: the soft prompt's
mean |post - base| minus each baseline's, the non-inferiority parts that keep a gap closed by
lowering scores from counting as evidence, and the guards (claims.guards): minus the gap before
tuning, and against the twins reassigned at random."""

from __future__ import annotations

import numpy as np

from softeval.analysis.claims.framework import LABEL, Inputs, claim
from softeval.analysis.claims.guards import BEFORE_TUNING, OWN_TWINS, before_tuning_missing, own_twins_part
from softeval.analysis.claims.sources import baseline_of, bootstrap_text, over, review_line, score_file
from softeval.analysis.claims.verdicts import GREATER, LESS, NOT_APPLICABLE, Part, Test, greater, less
from softeval.analysis.evidence import (
    NON_INFERIORITY,
    SIGNIFICANCE,
    Interval,
    absolute_gap_difference,
    holm_outcomes,
    paired_bootstrap,
    paired_counts,
)
from softeval.analysis.evidence.reassignment import gap_reassigned
from softeval.names import BASE, POST, SOFT_PROMPT


def gap_sources(inputs: Inputs, part: Part) -> list[str]:
    """Claim 5's files (soft prompt against the baseline, base and post-trained alike, or one
    role for a non-inferiority part) and a review line."""
    settings, twinned, name = inputs.settings, inputs.twinned, part.part
    final, metric = settings.final_step, settings.metric
    if name == BEFORE_TUNING:
        first = settings.first_step
        return [
            f"inputs: {metric} of {score_file(BASE, 'soft_prompt', final)} against "
            f"{score_file(POST, 'soft_prompt', final)}, and of the same at step {first}, {over(twinned, inputs.tasks)}",
            bootstrap_text(settings),
            f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, vs_step=first, metric=metric)}",
        ]
    if name == OWN_TWINS:
        return [
            f"inputs: mean {metric} of {score_file(BASE, 'soft_prompt', final)} against "
            f"{score_file(POST, 'soft_prompt', final)} of each twin a reassignment deals, "
            f"{over(twinned, inputs.tasks)}",
            f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, POST, metric=metric)}",
        ]
    baseline = baseline_of(part)
    if baseline is None:
        return []
    roles = [BASE] if "(base models)" in name else [POST] if "(post-trained" in name else [BASE, POST]
    files = " and ".join(
        f"{score_file(r, 'soft_prompt', final)} against {score_file(r, baseline, None)}" for r in roles
    )
    role = roles[-1]
    return [
        f"inputs: {metric} of {files}, {over(twinned, inputs.tasks)}",
        bootstrap_text(settings),
        f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, role, baseline, metric=metric)}",
    ]


@claim(
    5,
    "The score gap between base and post-trained models is smallest under soft prompting",
    needs=(SOFT_PROMPT, "baselines"),
    sources=gap_sources,
)
def claim_smallest_gap(inputs: Inputs) -> list[Part]:
    if not inputs.twinned:
        return [Part(5, "all", NOT_APPLICABLE, "no post-trained models: no score gap")]
    settings, parts = inputs.settings, []
    units = [(m, t) for t in inputs.tasks for m in inputs.twinned]

    def arrays(method: str) -> Pairs:
        return _pairs(inputs, units, method, inputs.step(method))

    def differing(pairs: list) -> int:
        return sum(o != "within noise" for o in holm_outcomes([paired_counts(b, p) for b, p in pairs]))

    sp = arrays(SOFT_PROMPT)
    sp_gap = _mean_gap(sp)
    for baseline in inputs.baselines():
        other = arrays(baseline)
        diff = _gap_difference(inputs, sp, other, units)
        gap = _mean_gap(other)
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
        for side, role in enumerate((BASE, "post-trained")):  # (base, post) per unit
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
    return parts + guards(inputs, sp, units) + inputs.without_twin(5)


def guards(inputs: Inputs, sp: Pairs, units: list[tuple[str, str]]) -> list[Part]:
    """The gap under the tuned prompt smaller than under the prompt before tuning, and smaller to
    each base model's own twin than to twins reassigned at random (claims.guards)."""
    settings = inputs.settings
    first, final, metric = settings.first_step, settings.final_step, settings.metric
    parts = []
    missing = before_tuning_missing(inputs, 5)
    if missing:
        parts.append(missing)
    else:
        untuned = _pairs(inputs, units, SOFT_PROMPT, first)
        diff = _gap_difference(inputs, sp, untuned, units)
        parts.append(
            Part(
                5,
                BEFORE_TUNING,
                less(diff),
                f"mean |post - base| {metric} over {len(units)} units under the soft prompt: at step {final} "
                f"{_mean_gap(sp):.3f}, at step {first} (before tuning, base and post-trained alike) "
                f"{_mean_gap(untuned):.3f}; difference {diff} (paired bootstrap): the tuning, not the "
                "prompt's initialisation, must close the gap",
                diff,
                test=Test(LESS),
            )
        )
    # (tasks x twinned models) means: `units` runs over the twinned models task by task
    shape = (len(inputs.tasks), len(inputs.twinned))
    base, post = (np.array([pair[side].mean() for pair in sp]).reshape(shape) for side in (0, 1))
    found = gap_reassigned(base, post, settings.seed)
    what = f"mean |post - base| {metric} under the soft prompt over {len(units)} units"
    return [*parts, own_twins_part(5, found, len(inputs.twinned), what, "")]


Pairs = list[tuple[np.ndarray, np.ndarray]]  # per unit: the base model's and its twin's per-example scores


def _pairs(inputs: Inputs, units: list[tuple[str, str]], method: str, step: int | None) -> Pairs:
    metric = inputs.settings.metric
    return [
        (inputs.values(BASE, m, t, method, step, metric), inputs.values(POST, m, t, method, step, metric))
        for m, t in units
    ]


def _mean_gap(pairs: Pairs) -> float:
    """Mean over units of |post - base| (each unit's means)."""
    return float(np.mean([abs(p.mean() - b.mean()) for b, p in pairs]))


def _gap_difference(inputs: Inputs, first: Pairs, second: Pairs, units: list[tuple[str, str]]) -> Interval:
    """_mean_gap(first) - _mean_gap(second), with its paired bootstrap interval."""
    settings = inputs.settings
    return absolute_gap_difference(
        [(b1, p1, b2, p2) for (b1, p1), (b2, p2) in zip(first, second, strict=True)],
        settings.bootstrap,
        settings.seed,
        [t for _, t in units],
    )
