"""Claim 4, zero- and few-shot agreement is an artifact of score compression: more near-zero base
units under the baselines than under the soft prompt, and the baselines' agreement owed to how
ties are broken (an exact randomisation of this run's tie-breaks, not a resampling)."""

from __future__ import annotations

import zlib

import numpy as np

from softeval.analysis.claims.framework import (
    LABEL,
    Inputs,
    claim,
    ranking_not_applicable_part,
    reference_examples,
)
from softeval.analysis.claims.sources import baseline_of, draws_text, over, review_line, score_file
from softeval.analysis.claims.verdicts import GREATER, Part, Test, greater
from softeval.analysis.evidence import Interval, exact_upper, near_zero_share, percentile_interval
from softeval.analysis.ranking import swap_distances_of_scores
from softeval.analysis.tables import ALL_TASKS
from softeval.names import BASE, POST, SOFT_PROMPT

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
    values = [inputs.values(BASE, m, t, method, inputs.step(method), settings.metric) for m, t in units]
    return near_zero_share(values, NEAR_ZERO, settings.bootstrap, settings.seed, [t for _, t in units], method)


def near_zero_units(inputs: Inputs, method: str) -> list[str]:
    """The base units below NEAR_ZERO, each with its exact 95% upper bound, for the evidence."""
    out = []
    for t in inputs.tasks:
        for m in inputs.twinned:
            values = inputs.values(BASE, m, t, method, inputs.step(method), inputs.settings.metric)
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
            [inputs.values(BASE, m, task, method, inputs.step(method), settings.metric).mean() for m in models]
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


def compression_sources(inputs: Inputs, part: Part) -> list[str]:
    """Claim 4's files (the baseline's and the soft prompt's means, or the baseline's against the
    reference ranking), what its interval is (the tie-breaks': no sampling) and a review line."""
    baseline = baseline_of(part)
    if baseline is None:
        return []
    settings, twinned = inputs.settings, inputs.twinned
    final, metric = settings.final_step, settings.metric
    if "near-zero" in part.part:
        return [
            f"inputs: mean {metric} of {score_file('base', baseline, None)} and "
            f"{score_file('base', 'soft_prompt', final)}, {over(twinned, inputs.tasks)}; near zero: < {NEAR_ZERO}",
            f"interval: paired bootstrap over test items, each unit's share drawn from its exact binomial "
            f"confidence distribution ({draws_text(settings)})",
            f"review: {review_line(twinned[0], inputs.tasks[0], baseline, None, flag='--not-strict')}",
        ]
    reference = settings.reference_method
    ref_file = score_file(POST, reference, inputs.step(reference))
    return [
        f"inputs: mean {metric} of {score_file('base', baseline, None)} against the reference method "
        f"{reference} ({ref_file}), {over(twinned, inputs.tasks)}",
        f"interval: not a sampling interval: the 95% range over {settings.bootstrap} uniformly random "
        f"tie-breaks of this run's scores (seed {settings.seed}, one stream per task and method)",
        f"review: {review_line(twinned[0], inputs.tasks[0], baseline, None, vs=reference, metric=metric)}",
    ]


@claim(
    4,
    "Agreement under zero- and few-shot is largely an artifact of score compression: compressed scores leave "
    "the ranking to tie-breaks; soft prompting lifts scores so that rankings are decided by scores",
    needs=(SOFT_PROMPT, "baselines"),
    sources=compression_sources,
)
def claim_score_compression(inputs: Inputs) -> list[Part]:
    missing = ranking_not_applicable_part(inputs, 4)
    if missing:
        return [missing]
    totals = inputs.swap[inputs.swap["task"] == ALL_TASKS].set_index("method")
    metric = inputs.settings.metric
    sp_share, sp_lower, sp_upper = near_zero_draws(inputs, SOFT_PROMPT)
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
