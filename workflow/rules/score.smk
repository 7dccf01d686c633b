# Scoring: the judge's per-example verdicts (knowledge and format) from a unit's generations
# and, on closed tasks, its option log-likelihoods.


rule judge:
    input:
        unpack(judge_inputs),
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
        task_includes=task_includes_of,
    output:
        unit_patterns(SCORES, UNITS),
    params:
        settings=json.dumps(EVAL["judge"], sort_keys=True),
        data=data_dir_of,
        task_dir=task_folder_of,
        logliks=lambda wildcards, input: input.logliks if hasattr(input, "logliks") else [],
    log:
        "logs/judge/{model}/{role}/{task}.log",
    benchmark:
        BENCHMARKS["judge"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval judge run --task {wildcards.task} --task-dir {params.task_dir:q} --data {params.data} "
        "--settings {params.settings:q} --generations {input.generations} --logliks {params.logliks} "
        "--out {output} 2> {log}"
