# Aggregation and publication: the tidy table, the paper's tables, figures and claims.


rule aggregate:
    input:
        scores=PLAN.all_scores(),
        meta=[data_meta(task) for task in TASKS],
    output:
        csv=report(table_file("scores", "csv"), caption="../report/scores.rst", category="Tables"),
        parquet=table_file("scores", "parquet"),
    params:
        settings=PLAN.aggregate_settings(),
        scores_root=results_folder(SCORES),
    log:
        "logs/aggregate.log",
    benchmark:
        benchmark_pattern("aggregate")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval aggregate --scores-root {params.scores_root} --scores {input.scores} --meta {input.meta} "
        "--settings {params.settings:q} "
        "--out-csv {output.csv} --out-parquet {output.parquet} 2> {log}"


rule tables:
    input:
        summary=table_file("scores", "parquet"),
        scores=PLAN.all_scores(),
        choices=PLAN.base_choice_files(),
        truth=[table_file("zoo", "csv")] if PLAN.has_truth else [],
    output:
        [
            report(
                table_file(name, ext),
                caption=f"../report/{name}.rst",
                # the leaderboard is what a user came for: a category of its own, named first on the front page
                category="Leaderboard" if name == "leaderboard" else "Tables",
                subcategory=name,
            )
            for name in PUBLICATION_TABLES
            for ext in ("csv", "md", "tex")
        ],
        draws=table_file(SWAP_DRAWS_TABLE, "parquet"),
    params:
        settings=PLAN.analysis_settings(),
        scores_root=results_folder(SCORES),
        loglik_root=results_folder(LOGLIK),
        truth=lambda wildcards, input: f"--truth {input.truth}" if input.truth else "",
        out_dir=subpath(input.summary, parent=True),
    log:
        "logs/tables.log",
    benchmark:
        benchmark_pattern("tables")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tables --summary {input.summary} --scores-root {params.scores_root} "
        "--loglik-root {params.loglik_root} {params.truth} "
        "--settings {params.settings:q} --out-dir {params.out_dir} 2> {log}"


rule figures:
    input:
        summary=table_file("scores", "parquet"),
        swap=table_file("swap_distance", "csv"),
        gap=table_file("score_gap", "csv"),
    output:
        [
            report(figure_file(name, ext), caption=f"../report/fig_{name}.rst", category="Figures")
            for name in FIGURES
            for ext in ("png", "pdf")
        ],
    params:
        settings=PLAN.analysis_settings(),
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/figures.log",
    benchmark:
        benchmark_pattern("figures")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval figures --summary {input.summary} --swap {input.swap} --gap {input.gap} "
        "--settings {params.settings:q} --out-dir {params.out_dir} 2> {log}"


rule claims:
    input:
        summary=table_file("scores", "parquet"),
        swap=table_file("swap_distance", "csv"),
        swap_draws=table_file(SWAP_DRAWS_TABLE, "parquet"),
        scores=PLAN.all_scores(),
        choices=PLAN.base_choice_files(),
        published=PUBLISHED,
    output:
        report(table_file("claims", "md"), caption="../report/claims.rst", category="Claims"),
        table_file("claims", "csv"),
        table_file("claims", "tex"),
    params:
        settings=PLAN.analysis_settings(),
        scores_root=results_folder(SCORES),
        loglik_root=results_folder(LOGLIK),
        stem=lambda wildcards, output: output[0][: -len(".md")],
        published=lambda wildcards, input: f"--published {shlex.quote(input.published)}" if input.published else "",
    log:
        "logs/claims.log",
    benchmark:
        benchmark_pattern("claims")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval claims --summary {input.summary} --swap {input.swap} --swap-draws {input.swap_draws} "
        "--scores-root {params.scores_root} "
        "--loglik-root {params.loglik_root} --settings {params.settings:q} --out {params.stem} "
        "{params.published} 2> {log}"


rule calibration:
    input:
        summary=table_file("scores", "parquet"),
        swap=table_file("swap_distance", "csv"),
        swap_draws=table_file(SWAP_DRAWS_TABLE, "parquet"),
        scores=PLAN.all_scores(),
        choices=PLAN.base_choice_files(),
        published=PUBLISHED,
    output:
        report(table_file("calibration", "md"), caption="../report/calibration.rst", category="Claims"),
        table_file("calibration", "csv"),
    params:
        settings=PLAN.analysis_settings(),
        scores_root=results_folder(SCORES),
        loglik_root=results_folder(LOGLIK),
        stem=lambda wildcards, output: output[0][: -len(".md")],
        published=lambda wildcards, input: f"--published {shlex.quote(input.published)}" if input.published else "",
    log:
        "logs/calibration.log",
    benchmark:
        benchmark_pattern("calibration")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval calibration --summary {input.summary} --swap {input.swap} "
        "--swap-draws {input.swap_draws} --scores-root {params.scores_root} --loglik-root {params.loglik_root} "
        "--settings {params.settings:q} --out {params.stem} {params.published} 2> {log}"


rule export_lm_eval:
    input:
        summary=table_file("scores", "parquet"),
        meta=[data_meta(task) for task in TASKS],
    output:
        PLAN.lm_eval_files(),
    params:
        settings=PLAN.export_settings(),
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/export_lm_eval.log",
    benchmark:
        benchmark_pattern("export_lm_eval")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval export --summary {input.summary} --meta {input.meta} "
        "--settings {params.settings:q} --lm-eval-dir {params.out_dir} > {log} 2>&1"


rule judge_validation:
    input:
        **PLAN.judge_model_inputs(),
        validation=PLAN.validation_set,
        tasks=VALIDATION_TASK_FILES,
    output:
        report(table_file("judge_validation", "md"), caption="../report/judge_validation.rst", category="Tables"),
        table_file("judge_validation", "csv"),
        table_file("judge_validation", "tex"),
        table_file("judge_validation", "json"),
    params:
        settings=PLAN.judge_settings(),
        task_dir=lambda wildcards, input: os.path.dirname(input.tasks[0]),
        stem=lambda wildcards, output: output[0][: -len(".md")],
        gpus=lambda wildcards, resources: f"--gpus {resources.gpu}" if resources.gpu else "",
    resources:
        **JUDGE_RESOURCES,
    log:
        "logs/judge_validation.log",
    benchmark:
        benchmark_pattern("judge_validation")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval judge validate {params.gpus} --settings {params.settings:q} "
        "--validation {input.validation} --task-dir {params.task_dir:q} --out {params.stem} > {log} 2>&1"


rule timings:
    input:
        PLAN.benchmark_files(),
    output:
        csv=report(table_file("timings", "csv"), caption="../report/timings.rst", category="Timings"),
        md=table_file("timings", "md"),
    params:
        patterns=lambda wildcards: dumps(PLAN.benchmark_patterns()),
        upstream=lambda wildcards: dumps(PLAN.upstream()),
    log:
        "logs/timings.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval timings --patterns {params.patterns:q} --upstream {params.upstream:q} --benchmarks {input} "
        "--out-csv {output.csv} --out-md {output.md} 2> {log}"
