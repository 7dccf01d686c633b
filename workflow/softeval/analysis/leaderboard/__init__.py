"""A leaderboard of base models: what each knows, with intervals, separable places and validity flags.

The method's purpose (DESIGN.md, user 1): rank candidate base checkpoints, with or without
post-trained versions, by what a soft prompt elicits. One table, one row per base model and
task plus one row per model over all tasks (task "all tasks", listed first: the leaderboard):

- knowledge, format and strict accuracy of the leaderboard's unit (by default the soft prompt
  at the final step), each with its 95% percentile-bootstrap interval; the mean over tasks
  resamples every task with its one index matrix (`evidence.task_resamples`), as every other
  table of a run does, so a model's and its neighbour's means move together;
- a rank by one metric (strict by default, knowledge or format on request): the competition
  rank of the estimate (1 + the number of models strictly better), so models with equal
  estimates share it ("2=") whatever their names; rows of a tie are listed by name, which is
  only a listing order, never a result;
- whether each place is separable from the one above: a paired bootstrap (the same resampled
  test examples for both models) of the difference to each model of the next better place;
  separable when every such 95% interval lies above zero (uncorrected, per adjacent pair);
- validity flags per model x task, summarised in the model's all-tasks row (any task, and
  which): format below 0.9; knowledge moved against zero-shot (the change's 95% interval wholly
  outside ±0.05; `unit_checks`' equivalence test calls it flat when its 90% interval lies
  within, two one-sided tests at 5%), for the base model and, where
  one was evaluated, its post-trained twin; chosen options collapsed onto one letter (closed
  tasks: normalised entropy of the chosen options below 0.5, as `unit_checks` flags it); more
  than 10% degenerate responses (the judge's `degenerate` field where score rows carry one,
  else a local check: empty, or the rule judge's test `softeval.data.answers.degenerate`).

Which method each row used: the leaderboard scores one method per task for every model alike
(a comparison of a soft-prompted model with a few-shot one would rank methods, not models).
Where the preferred method (`method`, soft_prompt by default) was not evaluated for every
model of a task, the first of `fallbacks` that was is used, and the row's `method` column says
which (the all-tasks row lists each task's where they differ). Never the best-scoring method
per model.

One module per concern, their names re-exported here: `places` (ranks, ties, separability),
`checks` (a unit's degenerate share and chosen options), `units` (reading the score rows, which
method a task is ranked by), `rows` (the per-task and all-tasks rows and their flags), `build`
(`build_leaderboard` and its caption) and `writer` (leaderboard.{csv,md,tex}).
"""

from __future__ import annotations

from softeval.analysis.leaderboard.build import build_leaderboard, leaderboard_caption, leaderboard_from_settings
from softeval.analysis.leaderboard.checks import (
    DEGENERATE_SHARE,
    FALSE_WORDS,
    JUDGE_DEGENERATE_KEYS,
    LETTER,
    degenerate_share,
    loglik_choices,
    looks_degenerate,
    response_choices,
)
from softeval.analysis.leaderboard.places import SEPARABLE, TIE_TOLERANCE, WITHIN_NOISE, Place, place_models, tie_blocks
from softeval.analysis.leaderboard.rows import (
    COLUMNS,
    FLAG_COLUMNS,
    FLAG_NAMES,
    FLAT,
    MOVED,
    NOT_EVALUATED,
    NOT_SHOWN_FLAT,
)
from softeval.analysis.leaderboard.units import (
    FALLBACKS,
    METRICS,
    base_models,
    choose_method,
    method_label,
    tasks_of,
)
from softeval.analysis.leaderboard.writer import COMPACT_COLUMNS, interval_text, leaderboard_text, write_leaderboard

__all__ = [
    "COLUMNS",
    "COMPACT_COLUMNS",
    "DEGENERATE_SHARE",
    "FALLBACKS",
    "FALSE_WORDS",
    "FLAG_COLUMNS",
    "FLAG_NAMES",
    "FLAT",
    "JUDGE_DEGENERATE_KEYS",
    "LETTER",
    "METRICS",
    "MOVED",
    "NOT_EVALUATED",
    "NOT_SHOWN_FLAT",
    "SEPARABLE",
    "TIE_TOLERANCE",
    "WITHIN_NOISE",
    "Place",
    "base_models",
    "build_leaderboard",
    "choose_method",
    "degenerate_share",
    "interval_text",
    "leaderboard_caption",
    "leaderboard_from_settings",
    "leaderboard_text",
    "loglik_choices",
    "looks_degenerate",
    "method_label",
    "place_models",
    "response_choices",
    "tasks_of",
    "tie_blocks",
    "write_leaderboard",
]
