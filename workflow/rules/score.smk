# Scoring: the judge's per-example verdicts (knowledge and format) from a unit's generations
# and, on closed tasks, its option log-likelihoods.


rule judge:
    input:
        unpack(judge_inputs),
        test="results/data/{task}/test.jsonl",
        task=task_file,
        task_includes=task_includes,
    output:
        unit_patterns(SCORES, PLAN.units),
    params:
        settings=PLAN.judge_settings(),
        data=data_dir_of,
        logliks=optional("logliks"),
    log:
        "logs/judge/{model}/{role}/{task}.log",
    benchmark:
        benchmark_pattern("judge")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval judge run --task {input.task:q} --data {params.data} "
        "--settings {params.settings:q} --generations {input.generations} --logliks {params.logliks} "
        "--out {output} 2> {log}"
