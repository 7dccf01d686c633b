# softeval: fair evaluation of base language models with brief soft-prompt tuning.
# Entry point: config validation, the stage rules, and the default target.
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


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
        expand("results/data/{task}/meta.json", task=TASKS),
        expand("results/tables/zoo.{ext}", ext=["csv", "md"]) if ZOO_MODELS else [],
        "results/tables/scores.csv",
        # each per-example file by name, so a missing one is rebuilt (and what depends on it rerun)
        per_example_files(),
        expand("results/tables/{name}.{ext}", name=PUBLICATION_TABLES, ext=["csv", "md", "tex"]),
        expand("results/figures/{name}.{ext}", name=FIGURES, ext=["png", "pdf"]),
        expand("results/tables/claims.{ext}", ext=["csv", "md", "tex"]),
        expand("results/tables/judge_validation.{ext}", ext=["csv", "md", "tex", "json"]),
        expand("results/tables/timings.{ext}", ext=["csv", "md"]),
