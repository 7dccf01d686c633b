"""Places and ties: each model's competition rank on one score (tied estimates share a place,
"2="), and whether it is separable from the place above by a paired interval of the difference.
Apart from the table, so that a place follows from the estimates and a difference function only."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from softeval.analysis.evidence import Interval

# Estimates this close are one place (means of 0/1 verdicts over the same test examples are equal
# exactly when the counts are; the tolerance only absorbs the float sums of the all-tasks mean).
TIE_TOLERANCE = 1e-9
SEPARABLE, WITHIN_NOISE = "separable", "within noise"


@dataclass(frozen=True)
class Place:
    """A model's place among the others on one score.

    rank: 1 + the number of models with a strictly better estimate (tied models share it);
    place: the rank as shown, with "=" where it is shared; tied_with: the other models of the
    same estimate; above: the models of the next better place (empty at the top); vs_above:
    SEPARABLE when every paired interval of (above - this) lies above zero, else WITHIN_NOISE
    ("" at the top); difference: the least separable of those intervals (None at the top)."""

    rank: int
    place: str
    tied_with: tuple[str, ...]
    above: tuple[str, ...]
    vs_above: str
    difference: Interval | None


def tie_blocks(estimates: Mapping[str, float], tolerance: float = TIE_TOLERANCE) -> list[list[str]]:
    """The models grouped by equal estimate, best first; a group lists its models by name (a
    listing order only: they share one place)."""
    for model, value in estimates.items():
        if not math.isfinite(value):
            raise ValueError(f"model {model}: estimate {value} cannot be ranked")
    blocks: list[list[str]] = []
    head = math.inf
    for model in sorted(estimates, key=lambda m: (-estimates[m], m)):
        if blocks and abs(estimates[model] - head) <= tolerance:
            blocks[-1].append(model)
        else:
            blocks.append([model])
            head = estimates[model]
    return [sorted(block) for block in blocks]


def place_models(
    estimates: Mapping[str, float],
    difference: Callable[[str, str], Interval] | None = None,
    tolerance: float = TIE_TOLERANCE,
) -> dict[str, Place]:
    """Every model's Place. `difference(upper, lower)` is the paired interval of upper's score
    minus lower's; without it, no place is tested (vs_above is "")."""
    places: dict[str, Place] = {}
    rank = 1
    previous: list[str] = []
    for block in tie_blocks(estimates, tolerance):
        shown = f"{rank}=" if len(block) > 1 else str(rank)
        for model in block:
            vs_above, least = "", None
            if previous and difference is not None:
                intervals = [difference(upper, model) for upper in previous]
                least = min(intervals, key=lambda iv: (iv.low, iv.estimate))
                vs_above = SEPARABLE if all(iv.low > 0 for iv in intervals) else WITHIN_NOISE
            places[model] = Place(rank, shown, tuple(m for m in block if m != model), tuple(previous), vs_above, least)
        previous = block
        rank += len(block)
    return places
