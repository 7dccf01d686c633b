# softeval: fair evaluation of base language models with brief soft-prompt tuning.
# Entry point: config validation, the stage rules, and the default target.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/zoo.smk"
include: "workflow/rules/models.smk"
include: "workflow/rules/tune.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/score.smk"
include: "workflow/rules/report.smk"


rule all:
    default_target: True
    input:
        # every table, figure and per-example file by name (softeval.plan.Plan.targets), so a
        # missing one is rebuilt (and what depends on it rerun)
        PLAN.targets(),
