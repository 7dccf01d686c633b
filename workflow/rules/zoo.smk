# The embedded model zoo: tokenizer, base models by recipe, post-trained twins, probes.


rule train_tokenizer:
    input:
        world="results/world/world.json",
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        directory("results/zoo/_tokenizer"),
    params:
        settings=PLAN.zoo_settings("tokenizer"),
    log:
        "logs/train_tokenizer.log",
    benchmark:
        benchmark_pattern("train_tokenizer")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tokenizer --settings {params.settings:q} --world {input.world} "
        "--tasks {input.tasks:q} --out {output} 2> {log}"


rule pretrain:
    input:
        world="results/world/world.json",
        tokenizer="results/zoo/_tokenizer",
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        directory("results/zoo/{model}/base"),
    params:
        settings=lambda wildcards: PLAN.pretrain_settings(wildcards.model),
    threads: ZOO["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/pretrain/{model}.log",
    benchmark:
        benchmark_pattern("pretrain")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval pretrain --name {wildcards.model} --settings {params.settings:q} --threads {threads} "
        "--world {input.world} --tokenizer {input.tokenizer} "
        "--tasks {input.tasks:q} --out {output} 2> {log}"


rule posttrain:
    input:
        base="results/zoo/{model}/base",
        train=PLAN.split_files("train"),
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        directory("results/zoo/{model}/post"),
    params:
        settings=PLAN.posttrain_settings(),
        data=data_root_of,
    threads: ZOO["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/posttrain/{model}.log",
    benchmark:
        benchmark_pattern("posttrain")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval posttrain --name {wildcards.model} --settings {params.settings:q} --threads {threads} "
        "--base {input.base} --data {params.data} "
        "--tasks {input.tasks:q} --out {output} 2> {log}"


# Both roles of a model in one job: starting Python, torch and transformers is most of a probe's time.
rule probe_zoo_model:
    input:
        models=expand("results/zoo/{{model}}/{role}", role=ROLES),
        world="results/world/world.json",
        test=PLAN.split_files("test"),
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        summaries=expand("results/probes/{{model}}/{role}.json", role=ROLES),
        examples=expand("results/probes/{{model}}/{role}.jsonl", role=ROLES),
    params:
        settings=PLAN.zoo_settings("probe"),
        data=data_root_of,
    threads: ZOO["threads"]
    log:
        "logs/probe_zoo_model/{model}.log",
    benchmark:
        benchmark_pattern("probe_zoo_model")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval probe --settings {params.settings:q} --threads {threads} --model {input.models} "
        "--world {input.world} --data {params.data} --tasks {input.tasks:q} "
        "--out-json {output.summaries} --out-examples {output.examples} 2> {log}"


rule zoo_report:
    input:
        [f"results/probes/{model}/{role}.json" for model in PLAN.zoo_models for role in PLAN.roles(model)],
    output:
        csv=report("results/tables/zoo.csv", caption="../report/zoo.rst", category="Ground truth"),
        md="results/tables/zoo.md",
    params:
        settings=PLAN.zoo_report_settings(),
        probes=lambda wildcards, input: os.path.dirname(os.path.dirname(input[0])),
    log:
        "logs/zoo_report.log",
    benchmark:
        benchmark_pattern("zoo_report")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval zoo-report --settings {params.settings:q} --probes {params.probes} "
        "--out-csv {output.csv} --out-md {output.md} 2> {log}"


# Random Llama-style models with a real-size vocabulary: the smoke run's stand-ins for hub models.


rule random_tokenizer:
    input:
        [f"results/data/{task}/{split}.jsonl" for task in TASKS for split in ("train", "test", "few_shot")],
    output:
        directory("results/random/_tokenizer/{vocab}"),
    params:
        seed=config["seed"],
    log:
        "logs/random_tokenizer/{vocab}.log",
    benchmark:
        benchmark_pattern("random_tokenizer")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval random-tokenizer --data {input} --vocab-size {wildcards.vocab} "
        "--seed {params.seed} --out {output} 2> {log}"


rule random_model:
    input:
        tokenizer=lambda wildcards: f"results/random/_tokenizer/{PLAN.random_settings(wildcards.model)['vocab_size']}",
    output:
        directory("results/random/{model}/{role}"),
    params:
        settings=lambda wildcards: dumps(PLAN.random_settings(wildcards.model)),
        chat=lambda wildcards: "--chat-template" if PLAN.chat_template(wildcards.model, wildcards.role) else "",
    log:
        "logs/random_model/{model}/{role}.log",
    benchmark:
        benchmark_pattern("random_model")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval random-model --settings {params.settings:q} --tokenizer {input.tokenizer} "
        "--role {wildcards.role} {params.chat} --out {output} 2> {log}"
