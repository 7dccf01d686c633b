# Scoring: option log-likelihoods (closed tasks) and the judge's per-example verdicts.


rule loglik:
    input:
        unpack(model_inputs),
        few_shot="results/data/{task}/few_shot.jsonl",
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
    output:
        "results/loglik/{model}/{role}/{task}/{method}.jsonl",
    params:
        model=model_ref,
        model_options=model_options_json,
        spec=loglik_params,
        data=data_dir_of,
        task_dir=task_folder_of,
    threads: job_threads
    resources:
        gpu=job_resource("gpu"),
        mem_mb=job_resource("mem_mb"),
        runtime=job_resource("runtime"),
        **GPU_MODEL,
    log:
        "logs/loglik/{model}/{role}/{task}/{method}.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval loglik --method {wildcards.method} "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {wildcards.task} "
        "--task-dir {params.task_dir:q} --data {params.data} --params {params.spec:q} --threads {threads} "
        "--out {output} 2> {log}"


rule loglik_soft_prompt:
    input:
        unpack(model_inputs),
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
        prompts=expand("results/softprompts/{{model}}/{{role}}/{{task}}/step{step}.safetensors", step=STEPS),
    output:
        expand("results/loglik/{{model}}/{{role}}/{{task}}/soft_prompt/step{step}.jsonl", step=STEPS),
    params:
        model=model_ref,
        model_options=model_options_json,
        spec=loglik_params,
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
        "logs/loglik/{model}/{role}/{task}/soft_prompt.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval loglik --method soft_prompt "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {wildcards.task} "
        "--task-dir {params.task_dir:q} --data {params.data} --params {params.spec:q} --threads {threads} "
        "--steps {params.steps} --prompts {input.prompts} --out {output} 2> {log}"


rule judge:
    input:
        unpack(judge_inputs),
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
    output:
        expand("results/scores/{{model}}/{{role}}/{{task}}/{unit}.jsonl", unit=UNITS),
    params:
        spec=json.dumps(EVAL["judge"], sort_keys=True),
        data=data_dir_of,
        task_dir=task_folder_of,
        logliks=lambda wildcards, input: input.logliks if hasattr(input, "logliks") else [],
    log:
        "logs/judge/{model}/{role}/{task}.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval judge run --task {wildcards.task} --task-dir {params.task_dir:q} --data {params.data} "
        "--params {params.spec:q} --generations {input.generations} --logliks {params.logliks} "
        "--out {output} 2> {log}"
