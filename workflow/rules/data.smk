# Data preparation: the synthetic world and every task's train/test splits.


rule build_world:
    output:
        "results/world/world.json",
    params:
        settings=PLAN.world_settings(),
    log:
        "logs/build_world.log",
    benchmark:
        benchmark_pattern("build_world")
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
        benchmark_pattern("prepare_task")
    params:
        source=prepare_arguments,
        out_dir=lambda wildcards, output: os.path.dirname(output.meta),
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval prepare --task {input.task:q} {params.source:q} --out {params.out_dir} 2> {log}"
