# Soft-prompt tuning: one prompt per model x role x task, trained on the task's train split.
# One job per model x role trains every task's prompt: it loads the model once (most of a
# small job's time), and each prompt's bytes are those of a job of its own.


rule tune:
    input:
        unpack(model_inputs),
        train=[f"results/data/{task}/train.jsonl" for task in TASKS],
        test=[f"results/data/{task}/test.jsonl" for task in TASKS],
        tasks=[f"{TASK_DIR}/{task}.yaml" for task in TASKS],
        task_includes=sorted({path for task in TASKS for path in TASK_INCLUDES[task]}),
    output:
        prompts=[softprompt_file("prompt.safetensors", task=task) for task in TASKS],
        snapshots=[softprompt_file(snapshot_name(step), task=task) for task in TASKS for step in STEPS],
        curves=[softprompt_file("curve.csv", task=task) for task in TASKS],
        metas=[softprompt_file("meta.json", task=task) for task in TASKS],
        peft=[directory(softprompt_file("peft", task=task)) for task in TASKS],
    params:
        model=model_ref,
        model_options=model_options_json,
        settings=tune_settings,
        tasks=TASKS,
        task_dir=task_dir_of,
        data=lambda wildcards, input: [os.path.dirname(path) for path in input.test],
        out_dirs=lambda wildcards, output: [os.path.dirname(path) for path in output.prompts],
    threads: job_threads
    resources:
        **MODEL_JOB_RESOURCES,
    log:
        "logs/tune/{model}/{role}.log",
    benchmark:
        BENCHMARKS["tune"]
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tune "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {params.tasks} --task-dir {params.task_dir:q} "
        "--data {params.data} --settings {params.settings:q} --threads {threads} --out-dir {params.out_dirs} 2> {log}"
