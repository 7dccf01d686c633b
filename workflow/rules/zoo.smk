# The embedded model zoo: tokenizer, base models by recipe, post-trained twins, probes.


rule train_tokenizer:
    input:
        world=world_file(),
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        directory(zoo_tokenizer_dir()),
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
        world=world_file(),
        tokenizer=zoo_tokenizer_dir(),
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        directory(zoo_model_dir(role="base")),
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
        base=zoo_model_dir(role="base"),
        train=PLAN.split_files("train"),
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        directory(zoo_model_dir(role="post")),
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
        models=[zoo_model_dir(role=role) for role in ROLES],
        world=world_file(),
        test=PLAN.split_files("test"),
        tasks=PLAN.world_task_files(),
        task_includes=PLAN.task_includes(*PLAN.world_tasks),
    output:
        summaries=[probe_file("json", role=role) for role in ROLES],
        examples=[probe_file("jsonl", role=role) for role in ROLES],
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
        [probe_file("json", model, role) for model in PLAN.zoo_models for role in PLAN.roles(model)],
    output:
        csv=report(table_file("zoo", "csv"), caption="../report/zoo.rst", category="Ground truth"),
        md=table_file("zoo", "md"),
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
        [data_file(split, task) for task in TASKS for split in SPLITS],
    output:
        directory(random_tokenizer_dir()),
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
        tokenizer=lambda wildcards: random_tokenizer_dir(PLAN.random_settings(wildcards.model)["vocab_size"]),
    output:
        directory(random_model_dir()),
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
