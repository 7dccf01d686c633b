# Evaluation on the test split, one job per model x role and kind of method, so each job loads
# its model once for every task: the plain methods (zero-shot, few-shot) together, and the soft
# prompt at every snapshot step together (it waits for the tune job). Each writes greedy
# responses and, on a closed task, option log-likelihoods, one file per task and method or step.
# Adding a model runs only its jobs; adding a task reruns every model's evaluate jobs (as it
# does their tune jobs), each of the old tasks' files made again with the same bytes.

if PLAN.plain_methods:

    rule evaluate:
        input:
            unpack(model_inputs),
            few_shot=PLAN.split_files("few_shot", TASKS),
            test=PLAN.split_files("test", TASKS),
            tasks=[PLAN.task_file(task) for task in TASKS],
            task_includes=PLAN.task_includes(*TASKS),
        output:
            generations=PLAN.evaluation_files(GENERATIONS, PLAN.plain_units),
            logliks=PLAN.evaluation_files(LOGLIK, PLAN.plain_units),
        params:
            model=model_ref,
            model_options=model_options,
            generate_settings=PLAN.generate_settings(),
            loglik_settings=PLAN.loglik_settings(),
            data=lambda wildcards, input: folders(input.test),
            methods=PLAN.plain_methods,
        threads: model_threads
        resources:
            **MODEL_JOB_RESOURCES,
        log:
            "logs/evaluate/{model}/{role}/plain.log",
        benchmark:
            benchmark_pattern("evaluate")
        conda:
            "../../envs/softeval.yaml"
        shell:
            "python -m softeval evaluate --methods {params.methods} "
            "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
            "--task {input.tasks:q} --data {params.data} "
            "--generate-settings {params.generate_settings:q} --loglik-settings {params.loglik_settings:q} "
            "--threads {threads} "
            "--generations {output.generations} --logliks {output.logliks} 2> {log}"


if PLAN.tunes:

    rule evaluate_soft_prompt:
        input:
            unpack(model_inputs),
            test=PLAN.split_files("test", TASKS),
            tasks=[PLAN.task_file(task) for task in TASKS],
            task_includes=PLAN.task_includes(*TASKS),
            prompts=[softprompt_file(snapshot_name(step), task=task) for task in TASKS for step in STEPS],
        output:
            generations=PLAN.evaluation_files(GENERATIONS, PLAN.step_units),
            logliks=PLAN.evaluation_files(LOGLIK, PLAN.step_units),
        params:
            model=model_ref,
            model_options=model_options,
            generate_settings=PLAN.generate_settings(),
            loglik_settings=PLAN.loglik_settings(),
            data=lambda wildcards, input: folders(input.test),
            steps=STEPS,
        threads: model_threads
        resources:
            **MODEL_JOB_RESOURCES,
        log:
            "logs/evaluate/{model}/{role}/soft_prompt.log",
        benchmark:
            benchmark_pattern("evaluate_soft_prompt")
        conda:
            "../../envs/softeval.yaml"
        shell:
            "python -m softeval evaluate --methods soft_prompt --steps {params.steps} --prompts {input.prompts} "
            "--model {params.model:q} --model-options {params.model_options:q} --gpus {resources.gpu} "
            "--task {input.tasks:q} --data {params.data} "
            "--generate-settings {params.generate_settings:q} --loglik-settings {params.loglik_settings:q} "
            "--threads {threads} "
            "--generations {output.generations} --logliks {output.logliks} 2> {log}"
