"""Artifact review: list the evaluated units and show the examples behind any table cell.

Everything is read from results/: the tidy table for the list, and for a cell the
per-example verdicts joined with the generation (full prompt, stop reason) and, for
closed tasks, the option log-likelihoods. A unit is shown under a header that says which
unit it is (the soft prompt's step, and which steps were evaluated), which files were read,
its counts (knowledge, format and strict means; on closed tasks the letters chosen by
likelihood and the gold letters, with unit_checks' collapse flag) and the task's format
rule, which is repeated beside every "format=no". Two units of one model, role and task are
compared example by example (`flips`): the examples one gets right and the other wrong, both
ways, with the exact McNemar test that unit_checks computes on the same split.

One module per concern, their names re-exported here: `units` (the list, a unit resolved against
the files present, its files loaded), `rule` (the task's format rule), `show` (one unit: its
header and examples) and `compare` (two units' flips).
"""

from __future__ import annotations

from softeval.analysis.review.compare import Flips, flips, flips_summary, format_flip, show_flips
from softeval.analysis.review.rule import FormatRule, anchored, format_rule, task_dirs
from softeval.analysis.review.show import STEP_ZERO, format_example, show_unit, unit_header, verdict_text, verdicts
from softeval.analysis.review.units import (
    FILTERS,
    METRICS,
    Unit,
    UnitData,
    evaluated_methods,
    evaluated_steps,
    list_units,
    load_unit,
    resolve_unit,
    unit_examples,
)

__all__ = [
    "FILTERS",
    "METRICS",
    "STEP_ZERO",
    "Flips",
    "FormatRule",
    "Unit",
    "UnitData",
    "anchored",
    "evaluated_methods",
    "evaluated_steps",
    "flips",
    "flips_summary",
    "format_example",
    "format_flip",
    "format_rule",
    "list_units",
    "load_unit",
    "resolve_unit",
    "show_flips",
    "show_unit",
    "task_dirs",
    "unit_examples",
    "unit_header",
    "verdict_text",
    "verdicts",
]
