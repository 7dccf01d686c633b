# Soft-prompt tuning: one prompt per model x role x task, trained on the task's train split.
# One job per model x role trains every task's prompt: it loads the model once (most of a
# small job's time), and each prompt's bytes are those of a job of its own.


rule tune:
    input:
        unpack(model_inputs),
        train=PLAN.split_files("train", TASKS),
        test=PLAN.split_files("test", TASKS),
        tasks=[PLAN.task_file(task) for task in TASKS],
        task_includes=PLAN.task_includes(*TASKS),
    output:
        prompts=[softprompt_file("prompt.safetensors", task=task) for task in TASKS],
        snapshots=[softprompt_file(snapshot_name(step), task=task) for task in TASKS for step in STEPS],
        curves=[softprompt_file("curve.csv", task=task) for task in TASKS],
        metas=[softprompt_file("meta.json", task=task) for task in TASKS],
        peft=[directory(softprompt_file("peft", task=task)) for task in TASKS],
    params:
        model=model_ref,
        model_options=model_options,
        settings=PLAN.tune_settings(),
        data=lambda wildcards, input: folders(input.test),
        out_dirs=lambda wildcards, output: folders(output.prompts),
    threads: model_threads
    resources:
        **MODEL_JOB_RESOURCES,
    log:
        "logs/tune/{model}/{role}.log",
    benchmark:
        benchmark_pattern("tune")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval tune "
        "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
        "--task {input.tasks:q} --data {params.data} --settings {params.settings:q} --threads {threads} "
        "--out-dir {params.out_dirs} 2> {log}"
