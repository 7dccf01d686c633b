"""The two guards claims 3 and 5 share, each a part of both: what they measure against the
post-trained twins must need the twins as paired (not twins reassigned at random), and it must
need the tuning (not the prompt before it).

Without them both claims held where nothing they claim happened (the calibration's controls): a
soft prompt that lifts every compressed score brings the base ranking nearer to any ranking that
does not put those models last and shrinks the gap to any twin, so the claims held with the twins
shuffled; and where zero-shot's ranking is no better than a random one, the untuned prompt's beat
it too.
"""

from __future__ import annotations

import math

from softeval.analysis.claims.framework import Inputs
from softeval.analysis.claims.verdicts import HOLDS, NOT_APPLICABLE, NOT_SHOWN, Part
from softeval.analysis.evidence.reassignment import ALPHA, EXACT_UP_TO, Reassigned, smallest_p

OWN_TWINS = "own twins, not twins reassigned at random"
BEFORE_TUNING = "vs the prompt before tuning"


def own_twins_part(claim: int, found: Reassigned, n_models: int, what: str, unit: str) -> Part:
    """The pairing guard: holds when the observed pairing beats random reassignments of the twins
    at one-sided 2.5% (an exact permutation p-value); never refuted (it only keeps a claim from
    holding on agreement that any pairing would give). With fewer than 5 models no pairing can reach
    2.5% (1/4! = 0.042): not applicable, which keeps the claim from holding."""
    if smallest_p(n_models) >= ALPHA:
        return Part(
            claim,
            OWN_TWINS,
            NOT_APPLICABLE,
            f"{n_models} models with a twin: their {math.factorial(n_models)} reassignments cannot tell the "
            f"twins as paired from random ones at {ALPHA:.3g} (the smallest p is 1/{math.factorial(n_models)}); "
            "at least 5 are needed",
        )
    how = "every reassignment" if n_models <= EXACT_UP_TO else "a seeded sample of reassignments"
    return Part(
        claim,
        OWN_TWINS,
        HOLDS if found.shown else NOT_SHOWN,
        f"{what}: {found.text(unit)}; interval: not a sampling interval but observed minus a random "
        f"reassignment's value, its 2.5th-97.5th percentiles over {how} (the same reassignment on every task)",
        found.interval(),
    )


def before_tuning_missing(inputs: Inputs, claim: int) -> Part | None:
    """The tuning guard needs a snapshot before the final one: without, not applicable (the claim
    then cannot hold)."""
    if inputs.settings.first_step < inputs.settings.final_step:
        return None
    return Part(
        claim,
        BEFORE_TUNING,
        NOT_APPLICABLE,
        "one soft-prompt snapshot only: nothing before tuning to compare (evaluation.tune.snapshots: add 0)",
    )
