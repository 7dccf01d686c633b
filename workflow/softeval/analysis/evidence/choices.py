"""How a unit's chosen options spread over the option letters (closed tasks): the normalised
entropy below which the choices count as collapsed onto one letter."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ChoiceSpread:
    """How a unit's chosen options spread over the option letters."""

    counts: dict[int, int]
    n_options: int

    @property
    def entropy(self) -> float:
        """Shannon entropy of the chosen options, normalised by log(n_options): 1 = even, 0 = one option."""
        total = sum(self.counts.values())
        if total == 0 or self.n_options < 2:
            return 1.0
        h = -sum(c / total * math.log(c / total) for c in self.counts.values() if c)
        return abs(h) / math.log(self.n_options)  # abs: one option gives -0.0

    @property
    def top_share(self) -> float:
        total = sum(self.counts.values())
        return max(self.counts.values()) / total if total else 0.0

    @property
    def top_letter(self) -> str:
        return chr(ord("A") + max(self.counts, key=lambda k: (self.counts[k], -k))) if self.counts else "-"


# A tuned prompt that puts 121 of 130 answers on "D" has normalised entropy 0.24; even choices
# are 1.0 and a model that knows its answers spreads them as the gold letters spread (about 1.0).
COLLAPSE_ENTROPY = 0.5


def choice_spread(chosen: Sequence[int], n_options: int) -> ChoiceSpread:
    return ChoiceSpread(dict(Counter(int(c) for c in chosen)), n_options)
