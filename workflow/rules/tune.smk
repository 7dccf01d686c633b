# Soft-prompt tuning: one prompt per model x role x task, trained on the task's train split.


rule tune:
    input:
        model=model_dir,
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
        spec=tune_params,
        data=data_dir_of,
        task_dir=task_folder_of,
        out_dir=subpath(output.prompt, parent=True),
    threads: EVAL["threads"]
    resources:
        mem_mb=2000,
    log:
        "logs/tune/{model}/{role}/{task}.log",
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tune --model {input.model} --task {wildcards.task} --task-dir {params.task_dir:q} "
        "--data {params.data} --params {params.spec:q} --threads {threads} --out-dir {params.out_dir} 2> {log}"
