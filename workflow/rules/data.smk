# Data preparation: the synthetic world and every task's train/test splits.


rule build_world:
    output:
        "results/world/world.json",
    params:
        settings=json.dumps({**config["world"], "seed": config["seed"]}, sort_keys=True),
    log:
        "logs/build_world.log",
    benchmark:
        BENCHMARKS["build_world"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval world --settings {params.settings:q} --out {output} 2> {log}"


rule prepare_task:
    input:
        unpack(prepare_inputs),
    output:
        train="results/data/{task}/train.jsonl",
        test="results/data/{task}/test.jsonl",
        few_shot="results/data/{task}/few_shot.jsonl",
        meta="results/data/{task}/meta.json",
    log:
        "logs/prepare_task/{task}.log",
    benchmark:
        BENCHMARKS["prepare_task"]
    params:
        task_dir=lambda wildcards, input: os.path.dirname(input.task),
        source=prepare_source_args,
        out_dir=lambda wildcards, output: os.path.dirname(output.meta),
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval prepare --task {wildcards.task} --task-dir {params.task_dir:q} {params.source} "
        "--out {params.out_dir} 2> {log}"
