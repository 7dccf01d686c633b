# Generation on the test split: zero-shot, few-shot, and the soft prompt at every snapshot step.


rule generate:
    input:
        model=model_dir,
        train="results/data/{task}/train.jsonl",
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
    output:
        "results/generations/{model}/{role}/{task}/{method}.jsonl",
    params:
        spec=generate_params,
        data=data_dir_of,
        task_dir=task_folder_of,
    threads: EVAL["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/generate/{model}/{role}/{task}/{method}.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval generate --method {wildcards.method} --model {input.model} --task {wildcards.task} "
        "--task-dir {params.task_dir:q} --data {params.data} --params {params.spec:q} --threads {threads} "
        "--out {output} 2> {log}"


rule generate_soft_prompt:
    input:
        model=model_dir,
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
        prompts=expand("results/softprompts/{{model}}/{{role}}/{{task}}/step{step}.safetensors", step=STEPS),
    output:
        expand("results/generations/{{model}}/{{role}}/{{task}}/soft_prompt/step{step}.jsonl", step=STEPS),
    params:
        spec=generate_params,
        data=data_dir_of,
        task_dir=task_folder_of,
        steps=STEPS,
    threads: EVAL["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/generate/{model}/{role}/{task}/soft_prompt.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval generate --method soft_prompt --model {input.model} --task {wildcards.task} "
        "--task-dir {params.task_dir:q} --data {params.data} --params {params.spec:q} --threads {threads} "
        "--steps {params.steps} --prompts {input.prompts} --out {output} 2> {log}"
