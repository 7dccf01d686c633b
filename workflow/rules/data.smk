# Data preparation: the synthetic world and every task's train/test splits.


rule build_world:
    output:
        world_file(),
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
        train=data_file("train"),
        test=data_file("test"),
        few_shot=data_file("few_shot"),
        meta=data_meta(),
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
