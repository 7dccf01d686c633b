# Soft-prompt tuning: one prompt per model x role x task, trained on the task's train split.


rule tune:
    input:
        unpack(model_inputs),
        train="results/data/{task}/train.jsonl",
        test="results/data/{task}/test.jsonl",
        task=f"{TASK_DIR}/{{task}}.yaml",
        task_includes=task_includes_of,
    output:
        prompt=softprompt_file("prompt.safetensors"),
        snapshots=[softprompt_file(snapshot_name(step)) for step in STEPS],
        curve=softprompt_file("curve.csv"),
        meta=softprompt_file("meta.json"),
        peft=directory(softprompt_file("peft")),
    params:
        model=model_ref,
        model_options=model_options_json,
        settings=tune_settings,
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
        "--data {params.data} --settings {params.settings:q} --threads {threads} --out-dir {params.out_dir} 2> {log}"
