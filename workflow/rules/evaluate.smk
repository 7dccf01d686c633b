# Evaluation on the test split, one job per model x role x task and kind of method, so each
# job loads its model once: the plain methods (zero-shot, few-shot) together, and the soft
# prompt at every snapshot step together; each writes greedy responses and, on a closed task,
# option log-likelihoods, one file per method or step.

if PLAIN_METHODS:

    rule evaluate:
        input:
            unpack(model_inputs),
            few_shot="results/data/{task}/few_shot.jsonl",
            test="results/data/{task}/test.jsonl",
            task=f"{TASK_DIR}/{{task}}.yaml",
            task_includes=task_includes_of,
        output:
            generations=unit_patterns(GENERATIONS, PLAIN_UNITS),
        wildcard_constraints:
            task=OPEN_TASK_PATTERN,
        params:
            model=model_ref,
            model_options=model_options_json,
            generate_settings=generate_settings,
            loglik_settings=loglik_settings,
            logliks=loglik_outputs,
            data=data_dir_of,
            task_dir=task_folder_of,
            methods=PLAIN_METHODS,
        threads: job_threads
        resources:
            **MODEL_JOB_RESOURCES,
        log:
            "logs/evaluate/{model}/{role}/{task}/plain.log",
        benchmark:
            BENCHMARKS["evaluate"]
        conda:
            "../../envs/softeval.yaml"
        shell:
            "python -m softeval evaluate --methods {params.methods} "
            "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
            "--task {wildcards.task} --task-dir {params.task_dir:q} --data {params.data} "
            "--generate-settings {params.generate_settings:q} --loglik-settings {params.loglik_settings:q} "
            "--threads {threads} "
            "--generations {output.generations} --logliks {params.logliks} 2> {log}"

    use rule evaluate as evaluate_closed with:
        output:
            generations=unit_patterns(GENERATIONS, PLAIN_UNITS),
            logliks=unit_patterns(LOGLIK, PLAIN_UNITS),
        wildcard_constraints:
            task=CLOSED_TASK_PATTERN,
        benchmark:
            BENCHMARKS["evaluate_closed"]


if "soft_prompt" in METHODS:

    rule evaluate_soft_prompt:
        input:
            unpack(model_inputs),
            test="results/data/{task}/test.jsonl",
            task=f"{TASK_DIR}/{{task}}.yaml",
            task_includes=task_includes_of,
            prompts=[softprompt_file(snapshot_name(step)) for step in STEPS],
        output:
            generations=unit_patterns(GENERATIONS, STEP_UNITS),
        wildcard_constraints:
            task=OPEN_TASK_PATTERN,
        params:
            model=model_ref,
            model_options=model_options_json,
            generate_settings=generate_settings,
            loglik_settings=loglik_settings,
            logliks=loglik_outputs,
            data=data_dir_of,
            task_dir=task_folder_of,
            steps=STEPS,
        threads: job_threads
        resources:
            **MODEL_JOB_RESOURCES,
        log:
            "logs/evaluate/{model}/{role}/{task}/soft_prompt.log",
        benchmark:
            BENCHMARKS["evaluate_soft_prompt"]
        conda:
            "../../envs/softeval.yaml"
        shell:
            "python -m softeval evaluate --methods soft_prompt --steps {params.steps} --prompts {input.prompts} "
            "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
            "--task {wildcards.task} --task-dir {params.task_dir:q} --data {params.data} "
            "--generate-settings {params.generate_settings:q} --loglik-settings {params.loglik_settings:q} "
            "--threads {threads} "
            "--generations {output.generations} --logliks {params.logliks} 2> {log}"

    use rule evaluate_soft_prompt as evaluate_soft_prompt_closed with:
        output:
            generations=unit_patterns(GENERATIONS, STEP_UNITS),
            logliks=unit_patterns(LOGLIK, STEP_UNITS),
        wildcard_constraints:
            task=CLOSED_TASK_PATTERN,
        benchmark:
            BENCHMARKS["evaluate_soft_prompt_closed"]
