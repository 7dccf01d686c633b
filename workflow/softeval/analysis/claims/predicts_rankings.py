"""Claim 3, soft-prompted base rankings predict post-trained rankings: the soft prompt's swap
distance to the post-trained ranking minus zero-shot's and few-shot's, both rankings resampled
from the same test items; and the guards (claims.guards): minus the prompt's before tuning, and
against the twins reassigned at random."""

from __future__ import annotations

from softeval.analysis.claims.framework import (
    LABEL,
    Inputs,
    claim,
    ranking_not_applicable_part,
)
from softeval.analysis.claims.guards import BEFORE_TUNING, OWN_TWINS, before_tuning_missing, own_twins_part
from softeval.analysis.claims.sources import baseline_of, draws_text, over, review_line, score_file
from softeval.analysis.claims.verdicts import LESS, Part, Test, less
from softeval.analysis.evidence import bias_shifted_interval
from softeval.analysis.evidence.reassignment import swap_distance_reassigned
from softeval.analysis.tables import ALL_TASKS
from softeval.names import BASE, POST, SOFT_PROMPT


def rankings_sources(inputs: Inputs, part: Part) -> list[str]:
    """Claim 3's files (both base rankings and the post-trained one compared with) and a review line."""
    settings, twinned = inputs.settings, inputs.twinned
    final, metric = settings.final_step, settings.metric
    reference = settings.reference_method
    ref_file = score_file(POST, reference, inputs.step(reference))
    against = f"ranked against the post-trained ranking by the reference method {reference} ({ref_file})"
    if part.part == BEFORE_TUNING:
        first = settings.first_step
        return [
            f"inputs: {metric} of {score_file('base', 'soft_prompt', final)} and "
            f"{score_file('base', 'soft_prompt', first)} {against}, {over(twinned, inputs.tasks)}",
            f"interval: bias-shifted percentile bootstrap of the swap-distance difference ({draws_text(settings)})",
            f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, vs_step=first, metric=metric)}",
        ]
    if part.part == OWN_TWINS:
        return [
            f"inputs: mean {metric} of {score_file('base', 'soft_prompt', final)} {against}, with each "
            f"reassignment of the twins' scores among the base models, {over(twinned, inputs.tasks)}",
            f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, vs=reference, metric=metric)}",
        ]
    baseline = baseline_of(part)
    if baseline is None:
        return []
    return [
        f"inputs: {metric} of {score_file('base', 'soft_prompt', final)} and {score_file('base', baseline, None)} "
        f"{against}, {over(twinned, inputs.tasks)}; ties broken alphabetically",
        f"interval: bias-shifted percentile bootstrap of the swap-distance difference ({draws_text(settings)}; both "
        "rankings resampled from the same test items)",
        f"review: {review_line(twinned[0], inputs.tasks[0], 'soft_prompt', final, vs=baseline, metric=metric)}",
    ]


@claim(
    3,
    "Soft-prompted base rankings predict post-trained rankings: smaller swap distance to the post-trained "
    "ranking than zero-shot and few-shot",
    needs=(SOFT_PROMPT, "baselines"),
    sources=rankings_sources,
)
def claim_predicts_rankings(inputs: Inputs) -> list[Part]:
    missing = ranking_not_applicable_part(inputs, 3)
    if missing:
        return [missing]
    totals = inputs.swap[inputs.swap["task"] == ALL_TASKS].set_index("method")
    sp_draws, parts = inputs.summed_swap_draws(SOFT_PROMPT), []
    sp = totals.loc[SOFT_PROMPT]
    for baseline in inputs.baselines():
        b = totals.loc[baseline]
        diff = bias_shifted_interval(
            float(sp["distance"] - b["distance"]), sp_draws - inputs.summed_swap_draws(baseline)
        )
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
    return parts + guards(inputs) + inputs.without_twin(3)


def guards(inputs: Inputs) -> list[Part]:
    """The soft-prompted ranking nearer the post-trained one than the prompt's before tuning, and
    nearer its own twins' ranking than to twins reassigned at random (claims.guards)."""
    settings = inputs.settings
    first, final = settings.first_step, settings.final_step
    parts = []
    missing = before_tuning_missing(inputs, 3)
    if missing:
        parts.append(missing)
    else:
        tuned, tuned_draws = inputs.swap_at(SOFT_PROMPT, final)
        untuned, untuned_draws = inputs.swap_at(SOFT_PROMPT, first)
        diff = bias_shifted_interval(float(tuned - untuned), tuned_draws - untuned_draws)
        parts.append(
            Part(
                3,
                BEFORE_TUNING,
                less(diff),
                f"swap distance to the post-trained ranking summed over {len(inputs.tasks)} task(s): soft prompt at "
                f"step {final} {tuned}, at step {first} (before tuning) {untuned}; difference {diff} (both rankings "
                "resampled from the same test examples, bias-shifted percentile bootstrap): the tuning, not the "
                "prompt's initialisation, must bring the ranking nearer",
                diff,
                test=Test(LESS),
            )
        )
    reference = settings.reference_method
    base = inputs.unit_means(BASE, SOFT_PROMPT, final)
    post = inputs.unit_means(POST, reference, inputs.step(reference))
    found = swap_distance_reassigned(base, post, settings.seed)
    what = (
        "swap distance of the soft-prompted base ranking to the post-trained ranking, summed over "
        f"{len(inputs.tasks)} task(s)"
    )
    return [*parts, own_twins_part(3, found, len(inputs.twinned), what, "swaps")]
