# Scoring: the judge's per-example verdicts (knowledge and format) from a unit's generations
# and, on closed tasks, its option log-likelihoods.
from softeval.judges.factory import judge_job_resources

# What a judge job asks the scheduler for (softeval.judges.factory.judge_job_resources): an LLM
# judge loaded in the job (hf) asks for a model job's GPUs, memory and time, and takes a GPU-slot
# lock (--gpus) like one; a judge server's client (openai) asks for no GPU and one `judge_slots`,
# which the profiles cap, so that the requests in flight across jobs stay within what one server
# answers within its timeout; the rule judge asks for no GPU.
JUDGE_RESOURCES = judge_job_resources(PLAN.judge, PLAN.evaluation["resources"])


rule judge:
    input:
        unpack(judge_inputs),
        test=data_file("test"),
        task=task_file,
        task_includes=task_includes,
    output:
        unit_patterns(SCORES, PLAN.units),
    params:
        settings=PLAN.judge_settings(),
        data=data_dir_of,
        logliks=optional("logliks"),
        # --gpus N for a judge that loads its model on GPUs (a GPU-slot lock pins them), else nothing
        gpus=lambda wildcards, resources: f"--gpus {resources.gpu}" if resources.gpu else "",
    resources:
        **JUDGE_RESOURCES,
    log:
        "logs/judge/{model}/{role}/{task}.log",
    benchmark:
        benchmark_pattern("judge")
    conda:
        "../../envs/softeval.yaml"
    shell:
        "python -m softeval judge run --task {input.task:q} --data {params.data} {params.gpus} "
        "--settings {params.settings:q} --generations {input.generations} --logliks {params.logliks} "
        "--out {output} 2> {log}"
