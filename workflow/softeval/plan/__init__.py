"""The run plan: everything a validated config asks the workflow to build, computed once in Python.

The Snakefile's rules ask the plan (through one-line input functions in rules/common.smk) for
their inputs, parameters and targets; nothing about *what* to run is decided in Snakemake code,
so the plan is unit-tested, linted and under the layer test like the rest of the package.

One module per concern, each a class that `Plan` is composed of:

- `evaluated`: the plan's state, read once (the tasks, each file loaded once; the models, their
  kinds and roles), and what is evaluated: the methods, the units, the soft prompt's steps
  (`steps`, one name, computed in `soft_prompt_steps`);
- `settings`: each rule's settings, as the JSON its job parses, its arguments and resources;
- `files`: each rule's input and output lists, the per-example files and the targets `all` asks for;
- `rules`: the rule table (`RULES`, `RuleShape`), each rule's jobs and its benchmark file (one
  pattern, `benchmark_pattern`: results/benchmarks/<rule>/<wildcard values>.tsv).

Why mixins rather than objects hanging off the plan (`PLAN.files.targets()`): the rules call
`PLAN.<method>()` some sixty times, and every concern reads the same state (the config, the
tasks, the models and their roles); one object keeps those calls and that state in one place,
while each class stays small enough to read at once. `settings`, `files` and `rules` each build
on `evaluated` only (none calls another), so a concern is read with `evaluated` beside it.
"""

from __future__ import annotations

from softeval.layout import SPLITS
from softeval.names import ROLES as ROLES  # the rules' role names, from here as before
from softeval.names import SOFT_PROMPT as SOFT_PROMPT
from softeval.plan.evaluated import Evaluated, soft_prompt_steps
from softeval.plan.files import FIGURES, PUBLICATION_TABLES, Files
from softeval.plan.rules import MODEL_JOB_RULES, RULES, Rules, RuleShape, benchmark_pattern
from softeval.plan.settings import Settings, dumps

__all__ = [
    "FIGURES",
    "MODEL_JOB_RULES",
    "PUBLICATION_TABLES",
    "ROLES",
    "RULES",
    "SOFT_PROMPT",
    "SPLITS",
    "Evaluated",
    "Files",
    "Plan",
    "RuleShape",
    "Rules",
    "Settings",
    "benchmark_pattern",
    "dumps",
    "soft_prompt_steps",
]


class Plan(Settings, Files, Rules):
    """What to run for one config; paths are relative to the working directory where they lie in it.

    Built with `Plan.from_config(config, root, workdir)` (softeval.plan.evaluated.Evaluated)."""
