"""Claim 2, soft prompting beats the baselines: the soft prompt's score minus zero-shot's and
few-shot's, on base models and on post-trained ones, with the knowledge-loss caveat and the
per-unit McNemar counts."""

from __future__ import annotations

from softeval.analysis.claims.framework import LABEL, Inputs, claim
from softeval.analysis.claims.sources import baseline_of, bootstrap_text, over, review_line, score_file
from softeval.analysis.claims.verdicts import GREATER, HOLDS, NOT_APPLICABLE, Part, Test, greater, less
from softeval.analysis.evidence import SIGNIFICANCE, holm_outcomes, paired_bootstrap, paired_counts
from softeval.names import BASE, POST, ROLES, SOFT_PROMPT


def beats_sources(inputs: Inputs, part: Part) -> list[str]:
    """Claim 2's files (the soft prompt's final step minus the baseline, per role) and a review line."""
    baseline = baseline_of(part)
    if baseline is None:
        return []
    settings = inputs.settings
    final, metric = settings.final_step, settings.metric
    role = BASE if part.part.startswith(BASE) else POST
    models = inputs.models if role == BASE else inputs.twinned
    return [
        f"inputs: {metric} and knowledge of {score_file(role, 'soft_prompt', final)} minus "
        f"{score_file(role, baseline, None)}, {over(models, inputs.tasks)}",
        bootstrap_text(settings),
        f"review: {review_line(models[0], inputs.tasks[0], 'soft_prompt', final, role, baseline, metric=metric)}"
        " (one per model and task)",
    ]


@claim(
    2,
    "Soft prompting beats zero-shot and few-shot on base models, and on post-trained models too",
    needs=(SOFT_PROMPT, "baselines"),
    sources=beats_sources,
)
def claim_beats_baselines(inputs: Inputs) -> list[Part]:
    settings, parts = inputs.settings, []
    for role in ROLES:
        who = BASE if role == BASE else "post-trained"
        if role not in inputs.roles:
            parts.append(Part(2, f"{who} models", NOT_APPLICABLE, f"no {who} models in this run"))
            continue
        models = inputs.models if role == BASE else inputs.twinned
        for baseline in inputs.baselines():
            units = [(m, t) for t in inputs.tasks for m in models]
            strict = [
                (
                    inputs.values(role, m, t, SOFT_PROMPT, settings.final_step, settings.metric),
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
                        inputs.values(role, m, t, SOFT_PROMPT, settings.final_step, "knowledge"),
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
