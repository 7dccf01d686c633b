# The embedded model zoo: tokenizer, base models by recipe, post-trained twins, probes.


rule train_tokenizer:
    input:
        world="results/world/world.json",
        tasks=task_files(),
    output:
        directory("results/zoo/_tokenizer"),
    params:
        settings=json.dumps(ZOO["tokenizer"], sort_keys=True),
        task_dir=task_dir_of,
        tasks=WORLD_TASKS,
    log:
        "logs/train_tokenizer.log",
    benchmark:
        BENCHMARKS["train_tokenizer"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tokenizer --settings {params.settings:q} --world {input.world} "
        "--task-dir {params.task_dir:q} --tasks {params.tasks} --out {output} 2> {log}"


rule pretrain:
    input:
        world="results/world/world.json",
        tokenizer="results/zoo/_tokenizer",
        tasks=task_files(),
    output:
        directory("results/zoo/{model}/base"),
    params:
        settings=pretrain_settings,
        task_dir=task_dir_of,
        tasks=WORLD_TASKS,
    threads: ZOO["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/pretrain/{model}.log",
    benchmark:
        BENCHMARKS["pretrain"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval pretrain --name {wildcards.model} --settings {params.settings:q} --threads {threads} "
        "--world {input.world} --tokenizer {input.tokenizer} --task-dir {params.task_dir:q} "
        "--tasks {params.tasks} --out {output} 2> {log}"


rule posttrain:
    input:
        base="results/zoo/{model}/base",
        train=split_files("train"),
        tasks=task_files(),
    output:
        directory("results/zoo/{model}/post"),
    params:
        settings=posttrain_settings,
        data=data_root_of,
        task_dir=task_dir_of,
        tasks=WORLD_TASKS,
    threads: ZOO["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/posttrain/{model}.log",
    benchmark:
        BENCHMARKS["posttrain"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval posttrain --name {wildcards.model} --settings {params.settings:q} --threads {threads} "
        "--base {input.base} --data {params.data} --task-dir {params.task_dir:q} "
        "--tasks {params.tasks} --out {output} 2> {log}"


# Both roles of a model in one job: starting Python, torch and transformers is most of a probe's time.
rule probe_zoo_model:
    input:
        models=expand("results/zoo/{{model}}/{role}", role=ROLES),
        world="results/world/world.json",
        test=split_files("test"),
        tasks=task_files(),
    output:
        summaries=expand("results/probes/{{model}}/{role}.json", role=ROLES),
        examples=expand("results/probes/{{model}}/{role}.jsonl", role=ROLES),
    params:
        settings=json.dumps(ZOO["probe"], sort_keys=True),
        data=data_root_of,
        task_dir=task_dir_of,
        tasks=WORLD_TASKS,
    threads: ZOO["threads"]
    log:
        "logs/probe_zoo_model/{model}.log",
    benchmark:
        BENCHMARKS["probe_zoo_model"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval probe --settings {params.settings:q} --threads {threads} --model {input.models} "
        "--world {input.world} --data {params.data} --task-dir {params.task_dir:q} --tasks {params.tasks} "
        "--out-json {output.summaries} --out-examples {output.examples} 2> {log}"


rule zoo_report:
    input:
        expand("results/probes/{model}/{role}.json", model=ZOO_MODELS, role=ROLES),
    output:
        csv=report("results/tables/zoo.csv", caption="../report/zoo.rst", category="Ground truth"),
        md="results/tables/zoo.md",
    params:
        settings=json.dumps({"models": [model_entry(config, m) for m in ZOO_MODELS]}, sort_keys=True),
        probes=lambda wildcards, input: os.path.dirname(os.path.dirname(input[0])),
    log:
        "logs/zoo_report.log",
    benchmark:
        BENCHMARKS["zoo_report"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval zoo-report --settings {params.settings:q} --probes {params.probes} "
        "--out-csv {output.csv} --out-md {output.md} 2> {log}"


# Random Llama-style models with a real-size vocabulary: the smoke run's stand-ins for hub models.


rule random_tokenizer:
    input:
        expand("results/data/{task}/{split}.jsonl", task=TASKS, split=["train", "test", "few_shot"]),
    output:
        directory("results/random/_tokenizer/{vocab}"),
    params:
        seed=config["seed"],
    log:
        "logs/random_tokenizer/{vocab}.log",
    benchmark:
        BENCHMARKS["random_tokenizer"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval random-tokenizer --data {input} --vocab-size {wildcards.vocab} "
        "--seed {params.seed} --out {output} 2> {log}"


rule random_model:
    input:
        tokenizer=lambda wildcards: f"results/random/_tokenizer/{random_spec(model_entry(config, wildcards.model))['vocab_size']}",
    output:
        directory("results/random/{model}/{role}"),
    params:
        settings=lambda wildcards: json.dumps(random_spec(model_entry(config, wildcards.model)), sort_keys=True),
        chat=lambda wildcards: (
            "--chat-template"
            if model_options(model_entry(config, wildcards.model), wildcards.role)["chat_template"]
            else ""
        ),
    log:
        "logs/random_model/{model}/{role}.log",
    benchmark:
        BENCHMARKS["random_model"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval random-model --settings {params.settings:q} --tokenizer {input.tokenizer} "
        "--role {wildcards.role} {params.chat} --out {output} 2> {log}"
