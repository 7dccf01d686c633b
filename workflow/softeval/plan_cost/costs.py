"""The GPU-seconds of the plan's jobs: one model x role x task's share of its tune and evaluation
jobs (`job_cost`) and of an LLM judge's requests (`judge_cost`).

What is run comes from the run plan (softeval.plan.Plan): its units (plain methods, one per
soft-prompt step), its steps, whether it tunes, and its tune and evaluation jobs per model x role.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from softeval.names import FEW_SHOT, ZERO_SHOT
from softeval.plan import MODEL_JOB_RULES, Plan
from softeval.plan_cost.lengths import CHARS_PER_TOKEN, TaskLengths
from softeval.plan_cost.roofline import (
    ASSUMED_32B,
    HF_IN_FLIGHT,
    VLLM_ENGINE_START_S,
    Roofline,
    Shape,
    hf_step_floor,
    model_shape,
)
from softeval.schema import InputError
from softeval.settings import VLLM_WINDOW
from softeval.shipped import workflow_root


@dataclass
class Cost:
    """GPU-seconds by phase, summed over jobs."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, phase: str, value: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + value

    @property
    def hours(self) -> float:
        return sum(self.seconds.values()) / 3600


def units_per_task(plan: Plan) -> int:
    """Evaluated units of one model x role x task: the plan's plain methods and one per soft-prompt step."""
    return len(plan.units)


def unit_prompts(plan: Plan, lengths: TaskLengths) -> list[float]:
    """Mean prompt length of each evaluated unit of one model x role x task: zero-shot, few-shot
    (k shots), then the soft prompt's vectors at each of the plan's steps."""
    prompts = []
    if ZERO_SHOT in plan.plain_methods:
        prompts.append(lengths.prompt)
    if FEW_SHOT in plan.plain_methods:
        prompts.append(lengths.prompt + plan.evaluation["few_shot"]["k"] * lengths.shot)
    if plan.tunes:
        prompts += [lengths.prompt + plan.evaluation["tune"]["n_tokens"]] * len(plan.steps)
    return prompts


def jobs_per_pair(plan: Plan, rules: tuple[str, ...]) -> float:
    """The plan's jobs of these rules per model x role (each such job runs over every task)."""
    jobs = plan.jobs()
    pairs = sum(len(plan.roles(model)) for model in plan.models)
    return sum(len(jobs[rule]) for rule in rules) / max(pairs, 1)


def evaluate_jobs(plan: Plan) -> float:
    """Evaluation jobs per model x role (each over every task): the plan's evaluate_soft_prompt job
    when it tunes, its evaluate job when it has another method."""
    return jobs_per_pair(plan, ("evaluate", "evaluate_soft_prompt"))


def gpu_jobs(plan: Plan) -> float:
    """Snakemake jobs per model x role x task: a task's share of the model x role's evaluation
    jobs and of its tune job (each loads the model once for every task)."""
    return jobs_per_pair(plan, MODEL_JOB_RULES) / len(plan.tasks)


def hf_steps(generate: dict[str, Any], lengths: TaskLengths, bound: str) -> float:
    """Decoding steps of one unit on the HF backend (softeval.engine.generate.decode): every row of
    the unit in flight (softeval.engine.chunks.write_streamed) through `batch_size` slots; when a
    quarter of them are free the next rows join, so rows in flight average HF_IN_FLIGHT of the
    slots, and the last rows drain to the slowest. Rows of equal length (the upper bound) end
    together: static batches."""
    rows = int(lengths.rows)
    slots = min(generate["batch_size"], rows)
    if bound == "upper":
        return -(-rows // slots) * lengths.slowest(bound, slots)
    mean = lengths.decoded(bound)
    return rows * mean / (slots * HF_IN_FLIGHT) + max(0.0, lengths.slowest(bound, slots) - mean)


def decode_seconds(
    generate: dict[str, Any],
    lengths: TaskLengths,
    prompt: float,
    shape: Shape,
    roof: Roofline,
    backend: str,
    bound: str,
    concurrency: int = 256,
) -> float:
    """One unit's decoding. Each step reads the weights once; each row's step reads its KV cache
    (its prompt and half its response on average). HF: continuous batching (hf_steps), a step at
    least its launches' time. vLLM: as many sequences in flight as its KV
    memory and `concurrency` allow, each window of VLLM_WINDOW prompts (one engine call) drained to
    its slowest sequence."""
    rows, mean = lengths.rows, lengths.decoded(bound)
    context = prompt + mean / 2
    kv = rows * mean * context * shape.kv_bytes_per_token  # every decoded token reads its row's cache
    if backend == "hf":
        steps = hf_steps(generate, lengths, bound)
        per_step = roof.bytes(2 * shape.params + kv / steps) if steps else 0.0
        return steps * max(per_step, hf_step_floor(shape))
    vllm = generate.get("vllm", {})
    free = roof.gpu.memory_gb * 1e9 * vllm.get("gpu_memory_utilization", 0.85) - 2 * shape.params
    # KV blocks are taken as a sequence grows (and a preempted one gives them back): the sequences
    # in flight hold their mean context
    fits = int(free // (context * shape.kv_bytes_per_token))
    if fits < 1:
        raise InputError(f"the model's weights and one sequence do not fit in {roof.gpu.name}'s memory")
    chunk = min(VLLM_WINDOW, rows)
    sequences = min(concurrency, chunk, fits)
    chunks = -(-rows // chunk)
    steps = max(rows * mean / sequences, chunks * lengths.slowest(bound, chunk))
    return roof.bytes(steps * 2 * shape.params + kv)


def job_cost(
    plan: Plan,
    lengths: TaskLengths,
    closed: bool,
    shape: Shape,
    roof: Roofline,
    backend: str,
    concurrency: int,
    job_start_s: float,
    bound: str = "upper",
    vllm_start_s: float = VLLM_ENGINE_START_S,
) -> Cost:
    """One model x role x task: its share of the jobs' start (loading the model; a vLLM engine
    per evaluation job), tuning and every unit's evaluation, under one bound ("upper": every row
    to its budget; "realistic")."""
    evaluation = plan.evaluation
    cost = Cost()
    cost.add("start", job_start_s * gpu_jobs(plan))
    if backend == "vllm":
        cost.add("start", vllm_start_s * evaluate_jobs(plan) / len(plan.tasks))
    if plan.tunes:
        tune = evaluation["tune"]
        tokens = tune["steps"] * tune["batch_size"] * (tune["n_tokens"] + lengths.prompt + lengths.target)
        # forward (2N) + backward to the inputs only (2N: no weight gradients); checkpointing adds a forward
        per_token = 6 if tune.get("gradient_checkpointing") else 4
        cost.add("tune", roof.compute(per_token * shape.params * tokens))
    for prompt in unit_prompts(plan, lengths):
        cost.add("prompts", roof.compute(2 * shape.params * lengths.rows * prompt))
        # a row runs until softeval's reading and the harness's have ended: one pass on the HF
        # backend; on vLLM a continuation of softeval's own tokens where the harness reads further,
        # so each row decodes the larger budget there too (its prefix cache saves the prompt)
        decode = decode_seconds(evaluation["generate"], lengths, prompt, shape, roof, backend, bound, concurrency)
        cost.add("decode", decode)
        if closed:  # every option scored after the cached prompt
            cost.add("options", roof.compute(2 * shape.params * lengths.rows * lengths.options * lengths.option))
    return cost


@dataclass(frozen=True)
class JudgeTemplate:
    """Tokens of one judge prompt's fixed text: the instruction every prompt of the kind starts
    with (before its first field; a vLLM server's prefix cache computes it once) and the rest."""

    prefix: float
    rest: float


def judge_templates(config: dict[str, Any]) -> dict[str, JudgeTemplate]:
    """The judge prompt file's fixed text per kind, in tokens (CHARS_PER_TOKEN characters each)."""
    path = Path(config["evaluation"]["judge"].get("prompts", "config/judges/default.yaml"))
    if not path.is_absolute():
        path = workflow_root() / path
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    out = {}
    for kind in ("knowledge", "format"):
        text = data[kind]["prompt"]
        start = text.index("{")
        fixed = re.sub(r"\{[a-z_]+\}", "", text[start:])
        out[kind] = JudgeTemplate(start / CHARS_PER_TOKEN, len(fixed) / CHARS_PER_TOKEN)
    return out


def judge_cost(
    plan: Plan, lengths: TaskLengths, closed: bool, roof: Roofline, bound: str = "upper", task: Any = None
) -> float:
    """Seconds of an LLM judge for one model x role x task: one prompt-only request (one-token
    verdict) per verdict the cascade sends on (knowledge on open tasks, format on all), each the
    prompt's fields and fixed text, less the shared instruction a vLLM server (openai) caches."""
    judge = plan.evaluation["judge"]
    if judge["name"] not in ("hf", "openai"):
        return 0.0
    shape = model_shape(judge["model"], judge.get("revision", "main"), ASSUMED_32B)
    templates = judge_templates(plan.config)
    cascade = judge.get("cascade", True)
    response = lengths.response_tokens(bound)
    fmt = len(getattr(task, "format_description", "")) / CHARS_PER_TOKEN
    fields = {
        "knowledge": lengths.prompt + (lengths.gold or lengths.target) + response,
        "format": fmt + response,
    }
    shares = {"knowledge": lengths.knowledge_share, "format": lengths.format_share}
    seconds = 0.0
    for kind in ("format",) if closed else ("knowledge", "format"):
        template = templates[kind]
        cached = judge["name"] == "openai"  # vLLM's prefix caching of the shared instruction
        tokens = fields[kind] + template.rest + (0.0 if cached else template.prefix)
        requests = lengths.rows * units_per_task(plan) * (shares[kind] if cascade else 1.0)
        seconds += roof.compute(2 * shape.params * requests * tokens)
    return seconds
