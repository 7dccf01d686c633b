"""Claim 5, the base/post-trained score gap is smallest under soft prompting: the soft prompt's
mean |post - base| minus each baseline's, and the non-inferiority parts that keep a gap closed
by lowering scores from counting as evidence."""

from __future__ import annotations

import numpy as np

from softeval.analysis.claims.framework import LABEL, Inputs, claim
from softeval.analysis.claims.sources import baseline_of, bootstrap_text, over, review_line, score_file
from softeval.analysis.claims.verdicts import GREATER, LESS, NOT_APPLICABLE, Part, Test, greater, less
from softeval.analysis.evidence import (
    NON_INFERIORITY,
    SIGNIFICANCE,
    absolute_gap_difference,
    holm_outcomes,
    paired_bootstrap,
    paired_counts,
)
from softeval.names import BASE, POST, SOFT_PROMPT


def gap_sources(inputs: Inputs, part: Part) -> list[str]:
    """Claim 5's files (soft prompt against the baseline, base and post-trained alike, or one
    role for a non-inferiority part) and a review line."""
    baseline = baseline_of(part)
    if baseline is None:
        return []
    settings, twinned, name = inputs.settings, inputs.twinned, part.part
    final, metric = settings.final_step, settings.metric
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

    def arrays(method: str) -> list[tuple[np.ndarray, np.ndarray]]:
        step = inputs.step(method)
        return [
            (
                inputs.values(BASE, m, t, method, step, settings.metric),
                inputs.values(POST, m, t, method, step, settings.metric),
            )
            for m, t in units
        ]

    def differing(pairs: list) -> int:
        return sum(o != "within noise" for o in holm_outcomes([paired_counts(b, p) for b, p in pairs]))

    sp = arrays(SOFT_PROMPT)
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
    return parts + inputs.without_twin(5)
