"""Per-example evidence behind the claims: paired resampling of test items, choice spread.

Every comparison here is paired: two methods (or a base model and its post-trained twin, or
two base models) answer the same test examples, so a resample draws the same examples for
both sides. Across units (model x task) one index matrix per task resamples every unit of that
task alike (the items' shared difficulty is part of the noise), and the unit means are
averaged, which is how the tables average them.

What a resample draws is the *item* a test example asks about. On the embedded world every task
asks about the same test countries, and a model that read a country's facts knows them in every
task: the country is the unit of the noise, shared across tasks. `declare_items` says which item
each test example asks about; tasks that share items are resampled by one draw of those items
(every task that asks about a drawn country takes all its questions about it). A task whose items
are declared by no other task (a real benchmark: each example its own item) is resampled by its
own examples, as before: one index matrix per task.

One module per concern, their names re-exported here: `thresholds` (the paper's thresholds and
the levels of intervals and tests), `intervals` (`Interval` and how one is read), `items` (the
declared items and each task's index matrix, `task_resamples`), `bootstrap` (the paired
bootstrap's means, differences and shares), `significance` (exact McNemar, Holm), `choices`
(the spread of chosen options) and `reassignment` (the twins reassigned at random: claims 3 and
5's exact permutation test, imported from its module).
"""

from __future__ import annotations

from softeval.analysis.evidence.bootstrap import (
    MetricReader,
    absolute_gap_difference,
    bootstrap_mean,
    near_zero_share,
    paired_bootstrap,
)
from softeval.analysis.evidence.choices import COLLAPSE_ENTROPY, ChoiceSpread, choice_spread
from softeval.analysis.evidence.intervals import (
    Interval,
    bias_shifted_interval,
    equivalent,
    exact_upper,
    percentile_interval,
)
from softeval.analysis.evidence.items import declare_items, declared_items, items_of, shared_items, task_resamples
from softeval.analysis.evidence.significance import Paired, holm, holm_outcomes, paired_counts
from softeval.analysis.evidence.thresholds import (
    EQUIVALENCE_LEVEL,
    FORMAT_SATURATED,
    KNOWLEDGE_FLAT,
    LEVEL,
    NON_INFERIORITY,
    SIGNIFICANCE,
)

__all__ = [
    "COLLAPSE_ENTROPY",
    "EQUIVALENCE_LEVEL",
    "FORMAT_SATURATED",
    "KNOWLEDGE_FLAT",
    "LEVEL",
    "NON_INFERIORITY",
    "SIGNIFICANCE",
    "ChoiceSpread",
    "Interval",
    "MetricReader",
    "Paired",
    "absolute_gap_difference",
    "bias_shifted_interval",
    "bootstrap_mean",
    "choice_spread",
    "declare_items",
    "declared_items",
    "equivalent",
    "exact_upper",
    "holm",
    "holm_outcomes",
    "items_of",
    "near_zero_share",
    "paired_bootstrap",
    "paired_counts",
    "percentile_interval",
    "shared_items",
    "task_resamples",
]
