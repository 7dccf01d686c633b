# Aggregation and publication: the tidy table, the paper's tables, figures and claims.


rule aggregate:
    input:
        scores=all_scores(),
        meta=expand("results/data/{task}/meta.json", task=TASKS),
    output:
        csv=report("results/tables/scores.csv", caption="../report/scores.rst", category="Tables"),
        parquet="results/tables/scores.parquet",
    params:
        settings=lambda wildcards: json.dumps({"bootstrap": config["analysis"]["bootstrap"], "seed": config["seed"]}),
        scores_root=per_unit_root(SCORES),
    log:
        "logs/aggregate.log",
    benchmark:
        BENCHMARKS["aggregate"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval aggregate --scores-root {params.scores_root} --scores {input.scores} --meta {input.meta} "
        "--settings {params.settings:q} "
        "--out-csv {output.csv} --out-parquet {output.parquet} 2> {log}"


rule tables:
    input:
        summary="results/tables/scores.parquet",
        scores=all_scores(),
        choices=base_choice_files(),
        truth=["results/tables/zoo.csv"] if HAS_TRUTH else [],
    output:
        [
            report(
                f"results/tables/{name}.{ext}",
                caption=f"../report/{name}.rst",
                category="Tables",
                subcategory=name,
            )
            for name in PUBLICATION_TABLES
            for ext in ("csv", "md", "tex")
        ],
    params:
        settings=analysis_settings,
        scores_root=per_unit_root(SCORES),
        loglik_root=per_unit_root(LOGLIK),
        truth=lambda wildcards, input: f"--truth {input.truth}" if input.truth else "",
        out_dir=subpath(input.summary, parent=True),
    log:
        "logs/tables.log",
    benchmark:
        BENCHMARKS["tables"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tables --summary {input.summary} --scores-root {params.scores_root} "
        "--loglik-root {params.loglik_root} {params.truth} "
        "--settings {params.settings:q} --out-dir {params.out_dir} 2> {log}"


rule figures:
    input:
        summary="results/tables/scores.parquet",
        swap="results/tables/swap_distance.csv",
        gap="results/tables/score_gap.csv",
    output:
        [
            report(f"results/figures/{name}.{ext}", caption=f"../report/fig_{name}.rst", category="Figures")
            for name in FIGURES
            for ext in ("png", "pdf")
        ],
    params:
        settings=analysis_settings,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    log:
        "logs/figures.log",
    benchmark:
        BENCHMARKS["figures"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval figures --summary {input.summary} --swap {input.swap} --gap {input.gap} "
        "--settings {params.settings:q} --out-dir {params.out_dir} 2> {log}"


rule claims:
    input:
        summary="results/tables/scores.parquet",
        swap="results/tables/swap_distance.csv",
        scores=all_scores(),
        choices=base_choice_files(),
        published=published_record(),
    output:
        report("results/tables/claims.md", caption="../report/claims.rst", category="Claims"),
        "results/tables/claims.csv",
        "results/tables/claims.tex",
    params:
        settings=analysis_settings,
        scores_root=per_unit_root(SCORES),
        loglik_root=per_unit_root(LOGLIK),
        stem=lambda wildcards, output: output[0][: -len(".md")],
        published=lambda wildcards, input: f"--published {shlex.quote(input.published)}" if input.published else "",
    log:
        "logs/claims.log",
    benchmark:
        BENCHMARKS["claims"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval claims --summary {input.summary} --swap {input.swap} --scores-root {params.scores_root} "
        "--loglik-root {params.loglik_root} --settings {params.settings:q} --out {params.stem} "
        "{params.published} 2> {log}"


rule judge_validation:
    input:
        unpack(judge_model_inputs),
        validation=VALIDATION_SET,
        tasks=VALIDATION_TASK_FILES,
    output:
        report("results/tables/judge_validation.md", caption="../report/judge_validation.rst", category="Tables"),
        "results/tables/judge_validation.csv",
        "results/tables/judge_validation.tex",
        "results/tables/judge_validation.json",
    params:
        settings=json.dumps(EVAL["judge"], sort_keys=True),
        task_dir=task_dir_of,
        stem=lambda wildcards, output: output[0][: -len(".md")],
    log:
        "logs/judge_validation.log",
    benchmark:
        BENCHMARKS["judge_validation"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval judge validate --settings {params.settings:q} --validation {input.validation} "
        "--task-dir {params.task_dir:q} --out {params.stem} > {log} 2>&1"


rule timings:
    input:
        benchmark_files(),
    output:
        csv=report("results/tables/timings.csv", caption="../report/timings.rst", category="Timings"),
        md="results/tables/timings.md",
    params:
        patterns=lambda wildcards: json.dumps(BENCHMARKS, sort_keys=True),
    log:
        "logs/timings.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval timings --patterns {params.patterns:q} --benchmarks {input} "
        "--out-csv {output.csv} --out-md {output.md} 2> {log}"
