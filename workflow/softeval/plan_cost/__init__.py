"""`softeval plan-cost`: what a config costs in GPU-hours, before anything runs.

The jobs are the workflow's own: the run plan's (softeval.plan.Plan) model x role x task units
and its tune and evaluation jobs, so a model without a post-trained twin costs its base role
only (one tuning run per model, role and task when soft_prompt is a method; zero-shot and
few-shot units and one soft-prompt unit per evaluated step; closed tasks also score their
options).
Two bounds, the same jobs: every row decoding to its token budget (and to lm-evaluation-harness's
256 tokens where a task file records the harness's reading), and realistic lengths: rows stop at
their stop string after the lengths measured on a real model's run (MEASURED: the rows whose end
the run saw, their mean and longest; the rest run to their budget), or after the task file's
target length where no run measured the task. Prompt lengths come from the task files'
`cost` block (published test sizes, estimated mean lengths) or, with --pilot, from a pilot run's
own generation files (the real tokenizer's prompt lengths).
Time is a roofline: prompt processing, option scoring, tuning and the judge's prompts are
compute-bound at a stated fraction of the GPU's peak; decoding is bound by memory bandwidth (each
decoding step reads the weights once, and each row's step its KV cache), and on the HF backend
also by its per-step overhead (kernel launches, the stop checks' sync): a step takes at least
HF_STEP_S_PER_LAYER a layer, whatever its bytes, as measured on an H200. The
HF backend keeps `generate.batch_size` rows in flight (softeval.engine.generate: continuous
batching, finished rows leave with their KV cache and the next rows join); vLLM (CUDA
graphs: the roofline alone) keeps `--vllm-concurrency` sequences in flight, as many as its KV
memory holds, and drains each engine call (VLLM_WINDOW prompts) to its slowest sequence; each of its
evaluation jobs starts an engine (VLLM_ENGINE_START_S). Tuning and option scoring run on the HF
path under both backends.
The judge (an LLM judge: hf, openai) runs behind the rule-first cascade (evaluation.judge.cascade,
on by default; softeval.judges.local_lm.CascadeJudge): the rule judge decides a verdict where it is
certain and only the rest go to the LLM, in the share MEASURED per task and kind on a real run.
Each request is a prompt-only pass (a one-token verdict); a vLLM judge server (openai) caches the
instruction that every prompt of a kind starts with (prefix caching), so only the rest is computed.

One module per part, each importable from here as before:
- `roofline`: the GPUs (`GPUS`), a model's shape (`Shape`, `model_shape`), the roofline and the
  HF backend's step floor;
- `lengths`: a task's sizes in tokens (`TaskLengths`, `task_lengths`, `pilot_lengths`) and what a
  real run measured (`MEASURED`);
- `costs`: the seconds of one model x role x task's share of the plan's jobs (`job_cost`) and of
  the judge (`judge_cost`), counted from the plan's units, steps and jobs;
- `table`: the plan of a config (`run_plan`), its GPU-hours (`plan_cost`) and the table (`cost_table`).
"""

from __future__ import annotations

from softeval.plan_cost.costs import (
    Cost,
    JudgeTemplate,
    decode_seconds,
    evaluate_jobs,
    gpu_jobs,
    hf_steps,
    job_cost,
    jobs_per_pair,
    judge_cost,
    judge_templates,
    unit_prompts,
    units_per_task,
)
from softeval.plan_cost.lengths import (
    BOUNDS,
    CHARS_PER_TOKEN,
    MEASURED,
    MEASURED_SOURCE,
    TaskLengths,
    pilot_lengths,
    pooled_shares,
    task_lengths,
    with_measurements,
)
from softeval.plan_cost.roofline import (
    ASSUMED_7B,
    ASSUMED_32B,
    GPU,
    GPUS,
    HF_IN_FLIGHT,
    HF_STEP_FIXED_S,
    HF_STEP_S_PER_LAYER,
    VLLM_ENGINE_START_S,
    Roofline,
    Shape,
    hf_step_floor,
    model_shape,
)
from softeval.plan_cost.table import BOUND_TITLES, PlanCost, cost_table, model_jobs, plan_cost, run_plan

__all__ = [
    "ASSUMED_7B",
    "ASSUMED_32B",
    "BOUNDS",
    "BOUND_TITLES",
    "CHARS_PER_TOKEN",
    "GPU",
    "GPUS",
    "HF_IN_FLIGHT",
    "HF_STEP_FIXED_S",
    "HF_STEP_S_PER_LAYER",
    "MEASURED",
    "MEASURED_SOURCE",
    "VLLM_ENGINE_START_S",
    "Cost",
    "JudgeTemplate",
    "PlanCost",
    "Roofline",
    "Shape",
    "TaskLengths",
    "cost_table",
    "decode_seconds",
    "evaluate_jobs",
    "gpu_jobs",
    "hf_step_floor",
    "hf_steps",
    "job_cost",
    "jobs_per_pair",
    "judge_cost",
    "judge_templates",
    "model_jobs",
    "model_shape",
    "pilot_lengths",
    "plan_cost",
    "pooled_shares",
    "run_plan",
    "task_lengths",
    "unit_prompts",
    "units_per_task",
    "with_measurements",
]
