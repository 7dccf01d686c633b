# Evaluation on the test split, one job per model x role x task and kind of method, so each
# job loads its model once: the plain methods (zero-shot, few-shot) together, and the soft
# prompt at every snapshot step together; each writes greedy responses and, on a closed task,
# option log-likelihoods, one file per method or step.

if PLAN.plain_methods:

    rule evaluate:
        input:
            unpack(model_inputs),
            few_shot="results/data/{task}/few_shot.jsonl",
            test="results/data/{task}/test.jsonl",
            task=task_file,
            task_includes=task_includes,
        output:
            generations=unit_patterns(GENERATIONS, PLAN.plain_units),
        wildcard_constraints:
            task=OPEN_TASK_PATTERN,
        params:
            model=model_ref,
            model_options=model_options,
            generate_settings=PLAN.generate_settings(),
            loglik_settings=PLAN.loglik_settings(),
            logliks=optional("logliks"),
            data=data_dir_of,
            methods=PLAN.plain_methods,
        threads: model_threads
        resources:
            **MODEL_JOB_RESOURCES,
        log:
            "logs/evaluate/{model}/{role}/{task}/plain.log",
        benchmark:
            benchmark_pattern("evaluate")
        conda:
            "../../envs/softeval.yaml"
        shell:
            "python -m softeval evaluate --methods {params.methods} "
            "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
            "--task {input.task:q} --data {params.data} "
            "--generate-settings {params.generate_settings:q} --loglik-settings {params.loglik_settings:q} "
            "--threads {threads} "
            "--generations {output.generations} --logliks {params.logliks} 2> {log}"

    use rule evaluate as evaluate_closed with:
        output:
            generations=unit_patterns(GENERATIONS, PLAN.plain_units),
            logliks=unit_patterns(LOGLIK, PLAN.plain_units),
        wildcard_constraints:
            task=CLOSED_TASK_PATTERN,
        benchmark:
            benchmark_pattern("evaluate_closed")


if PLAN.tunes:

    rule evaluate_soft_prompt:
        input:
            unpack(model_inputs),
            test="results/data/{task}/test.jsonl",
            task=task_file,
            task_includes=task_includes,
            prompts=[softprompt_file(snapshot_name(step)) for step in STEPS],
        output:
            generations=unit_patterns(GENERATIONS, PLAN.step_units),
        wildcard_constraints:
            task=OPEN_TASK_PATTERN,
        params:
            model=model_ref,
            model_options=model_options,
            generate_settings=PLAN.generate_settings(),
            loglik_settings=PLAN.loglik_settings(),
            logliks=optional("logliks"),
            data=data_dir_of,
            steps=STEPS,
        threads: model_threads
        resources:
            **MODEL_JOB_RESOURCES,
        log:
            "logs/evaluate/{model}/{role}/{task}/soft_prompt.log",
        benchmark:
            benchmark_pattern("evaluate_soft_prompt")
        conda:
            "../../envs/softeval.yaml"
        shell:
            "python -m softeval evaluate --methods soft_prompt --steps {params.steps} --prompts {input.prompts} "
            "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
            "--task {input.task:q} --data {params.data} "
            "--generate-settings {params.generate_settings:q} --loglik-settings {params.loglik_settings:q} "
            "--threads {threads} "
            "--generations {output.generations} --logliks {params.logliks} 2> {log}"

    use rule evaluate_soft_prompt as evaluate_soft_prompt_closed with:
        output:
            generations=unit_patterns(GENERATIONS, PLAN.step_units),
            logliks=unit_patterns(LOGLIK, PLAN.step_units),
        wildcard_constraints:
            task=CLOSED_TASK_PATTERN,
        benchmark:
            benchmark_pattern("evaluate_soft_prompt_closed")
