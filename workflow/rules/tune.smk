# Soft-prompt tuning: one prompt per model x role x task, trained on the task's train split.


rule tune:
    input:
        unpack(model_inputs),
        train="results/data/{task}/train.jsonl",
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
    output:
        prompt="results/softprompts/{model}/{role}/{task}/prompt.safetensors",
        snapshots=expand("results/softprompts/{{model}}/{{role}}/{{task}}/step{step}.safetensors", step=STEPS),
        curve="results/softprompts/{model}/{role}/{task}/curve.csv",
        meta="results/softprompts/{model}/{role}/{task}/meta.json",
        peft=directory("results/softprompts/{model}/{role}/{task}/peft"),
    params:
        model=model_ref,
        model_options=model_options_json,
        spec=tune_params,
        data=data_dir_of,
        task_dir=task_folder_of,
        out_dir=subpath(output.prompt, parent=True),
    threads: job_threads
    resources:
        **MODEL_JOB_RESOURCES,
    log:
        "logs/tune/{model}/{role}/{task}.log",
    benchmark:
        BENCHMARKS["tune"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tune "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {wildcards.task} --task-dir {params.task_dir:q} "
        "--data {params.data} --params {params.spec:q} --threads {threads} --out-dir {params.out_dir} 2> {log}"
