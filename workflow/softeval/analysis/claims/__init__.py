"""The paper's claims (arXiv:2606.12117), checked on this run's per-example scores.

A claim is one object (`Claim`: number, statement, what the run needs for it, its check, what
claims.md says under its parts) in the `CLAIMS` registry; `@claim(...)` on a check function adds
one (docs/extending.md). Each claim is one module of this package (`format_without_knowledge`,
`beats_baselines`, `predicts_rankings`, `score_compression`, `smallest_gap`), beside what they
share: `verdicts` (how an interval becomes a verdict), `framework` (`Inputs`, the registry,
`check_claims`), `guards` (claims 3 and 5's parts against the prompt before tuning and against
twins reassigned at random), `sources` (the files and review lines claims.md names) and `writer`
(claims.{csv,md,tex}). Importing the package imports the claims in number order, the registry's.

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
  uniformly random tie-breaks of this run's scores (an exact randomisation);
- claims 3 and 5's "own twins" guard: not a sampling interval either, but observed minus the
  statistic's value under a reassignment of the twins, over every reassignment (an exact
  permutation test: shown when fewer than 2.5% do as well; it never refutes).

Computed, never written by hand: `softeval claims` from the score files.
"""

from __future__ import annotations

from softeval.analysis.claims.framework import (
    CLAIMS,
    LABEL,
    NEEDS,
    ChoiceReader,
    Claim,
    ClaimCheck,
    Inputs,
    Need,
    PartSources,
    check_claims,
    claim,
    part_sources,
    ranking_not_applicable_part,
    reference_examples,
)
from softeval.analysis.claims.sources import METHOD_OF, SCORES, review_line, score_file
from softeval.analysis.claims.verdicts import (
    FRAGILE,
    GREATER,
    HOLDS,
    LESS,
    NOT_APPLICABLE,
    NOT_SHOWN,
    REFUTE_ALPHA,
    REFUTED,
    SCOPE_NOTE,
    VERDICTS,
    WITHIN,
    Part,
    Test,
    claim_verdicts,
    combine,
    display_verdict,
    flat_text,
    fragile_note,
    greater,
    holm_refutations,
    less,
    within,
)

# The claims, in number order: importing a claim's module registers it, and the registry keeps that
# order (claims.csv and claims.md follow it), so these imports are not sorted by module name.
# isort: off
from softeval.analysis.claims.format_without_knowledge import (
    PAPER_SATURATION,
    FormatCurve,
    claim_format_without_knowledge,
    moved_units,
    saturation_draws,
    saturation_order,
)
from softeval.analysis.claims.beats_baselines import claim_beats_baselines
from softeval.analysis.claims.predicts_rankings import claim_predicts_rankings
from softeval.analysis.claims.score_compression import (
    NEAR_ZERO,
    claim_score_compression,
    near_zero_draws,
    near_zero_units,
    random_tie_break_savings,
    tie_dependence,
)
from softeval.analysis.claims.smallest_gap import claim_smallest_gap

# isort: on
from softeval.analysis.claims.writer import CLAIMS_RULES, truth_note, write_claims

__all__ = [
    "CLAIMS",
    "CLAIMS_RULES",
    "FRAGILE",
    "GREATER",
    "HOLDS",
    "LABEL",
    "LESS",
    "METHOD_OF",
    "NEAR_ZERO",
    "NEEDS",
    "NOT_APPLICABLE",
    "NOT_SHOWN",
    "PAPER_SATURATION",
    "REFUTED",
    "REFUTE_ALPHA",
    "SCOPE_NOTE",
    "SCORES",
    "VERDICTS",
    "WITHIN",
    "ChoiceReader",
    "Claim",
    "ClaimCheck",
    "FormatCurve",
    "Inputs",
    "Need",
    "Part",
    "PartSources",
    "Test",
    "check_claims",
    "claim",
    "claim_beats_baselines",
    "claim_format_without_knowledge",
    "claim_predicts_rankings",
    "claim_score_compression",
    "claim_smallest_gap",
    "claim_verdicts",
    "combine",
    "display_verdict",
    "flat_text",
    "fragile_note",
    "greater",
    "holm_refutations",
    "less",
    "moved_units",
    "near_zero_draws",
    "near_zero_units",
    "part_sources",
    "random_tie_break_savings",
    "ranking_not_applicable_part",
    "reference_examples",
    "review_line",
    "saturation_draws",
    "saturation_order",
    "score_file",
    "tie_dependence",
    "truth_note",
    "within",
    "write_claims",
]
