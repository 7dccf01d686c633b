# Generation on the test split: zero-shot, few-shot, and the soft prompt at every snapshot step.


rule generate:
    input:
        unpack(model_inputs),
        few_shot="results/data/{task}/few_shot.jsonl",
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
    output:
        "results/generations/{model}/{role}/{task}/{method}.jsonl",
    params:
        model=model_ref,
        model_options=model_options_json,
        spec=generate_params,
        data=data_dir_of,
        task_dir=task_folder_of,
    threads: job_threads
    resources:
        gpu=job_resource("gpu"),
        mem_mb=job_resource("mem_mb"),
        runtime=job_resource("runtime"),
        **GPU_MODEL,
    log:
        "logs/generate/{model}/{role}/{task}/{method}.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval generate --method {wildcards.method} "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {wildcards.task} "
        "--task-dir {params.task_dir:q} --data {params.data} --params {params.spec:q} --threads {threads} "
        "--out {output} 2> {log}"


rule generate_soft_prompt:
    input:
        unpack(model_inputs),
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
        prompts=expand("results/softprompts/{{model}}/{{role}}/{{task}}/step{step}.safetensors", step=STEPS),
    output:
        expand("results/generations/{{model}}/{{role}}/{{task}}/soft_prompt/step{step}.jsonl", step=STEPS),
    params:
        model=model_ref,
        model_options=model_options_json,
        spec=generate_params,
        data=data_dir_of,
        task_dir=task_folder_of,
        steps=STEPS,
    threads: job_threads
    resources:
        gpu=job_resource("gpu"),
        mem_mb=job_resource("mem_mb"),
        runtime=job_resource("runtime"),
        **GPU_MODEL,
    log:
        "logs/generate/{model}/{role}/{task}/soft_prompt.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval generate --method soft_prompt "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {wildcards.task} "
        "--task-dir {params.task_dir:q} --data {params.data} --params {params.spec:q} --threads {threads} "
        "--steps {params.steps} --prompts {input.prompts} --out {output} 2> {log}"
