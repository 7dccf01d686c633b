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
"""

from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from softeval.config import model_options
from softeval.data.tasks import OPTIONS_MAX, TRAIN_MAX, Task
from softeval.layout import GENERATIONS, parse_unit_path
from softeval.plan import MODEL_JOB_RULES, Plan, soft_prompt_steps
from softeval.schema import InputError
from softeval.settings import VLLM_WINDOW
from softeval.shipped import workflow_root


@dataclass(frozen=True)
class GPU:
    """Peak dense bf16 throughput and memory bandwidth from the vendor's data sheet."""

    name: str
    tflops: float
    bandwidth_tb_s: float
    memory_gb: float


GPUS = {
    "a100-80gb": GPU("NVIDIA A100 80GB SXM", 312.0, 2.039, 80.0),
    "h100-sxm": GPU("NVIDIA H100 SXM", 989.0, 3.35, 80.0),
    "h200": GPU("NVIDIA H200", 989.0, 4.8, 141.0),
}

# HF decoding is bound by its per-step overhead, not its bytes: eager PyTorch launches ~40 kernels
# per decoder layer each step, and softeval's loop reads the new tokens back for its stop checks (a
# sync). Measured on one H200 (benchmarks/gpu_check.py --scale 7b, benchmarks/README.md "On one
# H200", 2026-12-04): a 32-layer Llama-2-7B-shaped model decodes at 145.8 ms a step at batch 32
# and 150.6 at batch 128 in softeval's loop (transformers' own `generate`: 44.7 and 71.0), where
# the step's bytes take ~4 ms at batch 32. A step takes at least this much a layer, whatever its
# bytes (the host's time, so the same on every GPU).
HF_STEP_S_PER_LAYER = 145.8e-3 / 32
HF_STEP_FIXED_S = 0.0
# Continuous batching refills a batch when a quarter of its slots are free: between 3/4 and all of
# them hold a row, 7/8 on average.
HF_IN_FLIGHT = 7 / 8
# vLLM's engine start (weights, KV-cache profiling, CUDA-graph capture, torch.compile): 1-2 minutes;
# each evaluation job under `backend: vllm` starts one (softeval.jobs.evaluate)
VLLM_ENGINE_START_S = 90.0
CHARS_PER_TOKEN = 4.0  # the judge's instructions and fields, measured in characters (English BPE)

# The judge cascade's LLM share and the responses' lengths, per task, measured on a real model:
#   .venv/bin/python benchmarks/cascade_share.py --results <run>/results --json
# on a finished run (2026-12-04) of tests/configs/real-small.yaml as it is: SmolLM2-135M-Instruct,
# base and post roles, the seven real tasks' fixtures (10-11 test rows each), zero-shot, few-shot
# and the soft prompt after its 4 tuning steps, the rule judge: 60-66 rows per task.
# tests/data/cascade-run/ holds that run's score and generation files (the fields the script
# reads); tests/unit/test_plan_cost.py checks that these are the script's figures on them.
# knowledge_share / format_share: rows the cascade sends to the LLM for that verdict (closed
# tasks take knowledge from the option log-likelihoods, never from the judge); length_share: rows
# cut at softeval's token budget, harness_cut_share: those of them whose lm-evaluation-harness
# reading was cut at its budget too (they decode the larger budget); ended_*: the other rows'
# decoded tokens (both readings: mean, largest) and response tokens (softeval's reading), where
# softeval's reading stopped or the harness's went on to a stop (benchmarks/cascade_share.py
# row_end); gold_chars: what an open task's knowledge prompt shows as the gold (answer | aliases).
# Caveats, each making the realistic bound higher, not lower: a 135M model answers fewer questions
# right and in format than a 7B one, so the rule is certain less often (more LLM verdicts), and
# repeats itself to its budget more often (rows cut at both budgets); and the run's budgets are
# the fixtures' (train_max: GSM8K's ~30 tokens, MATH's ~21), so a row cut there whose end no
# reading saw is counted as running to the paper's budget.
MEASURED_SOURCE = (
    "benchmarks/cascade_share.py on a run of tests/configs/real-small.yaml (SmolLM2-135M-Instruct, base and "
    "post, the seven tasks' fixtures, 60-66 rows a task; tests/data/cascade-run)"
)
MEASURED: dict[str, dict[str, Any]] = {
    "arc_challenge": {
        "rows": 60,
        "units": 6,
        "closed": True,
        "knowledge_share": 0.0,
        "format_share": 0.55,
        "length_share": 0.0333,
        "harness_cut_share": 0.0333,
        "ended_mean_tokens": 3.1,
        "ended_max_tokens": 5.0,
        "ended_response_tokens": 3.1,
        "gold_chars": 0.0,
    },
    "commonsense_qa": {
        "rows": 60,
        "units": 6,
        "closed": True,
        "knowledge_share": 0.0,
        "format_share": 0.4833,
        "length_share": 0.0,
        "harness_cut_share": 0.0,
        "ended_mean_tokens": 3.0,
        "ended_max_tokens": 4.0,
        "ended_response_tokens": 3.0,
        "gold_chars": 0.0,
    },
    "gsm8k": {
        "rows": 60,
        "units": 6,
        "closed": False,
        "knowledge_share": 0.95,
        "format_share": 0.3833,
        "length_share": 0.0833,
        "harness_cut_share": 0.05,
        "ended_mean_tokens": 37.1,
        "ended_max_tokens": 132.0,
        "ended_response_tokens": 37.1,
        "gold_chars": 2.6,
    },
    "math500": {
        "rows": 66,
        "units": 6,
        "closed": False,
        "knowledge_share": 0.7273,
        "format_share": 0.1364,
        "length_share": 0.1515,
        "harness_cut_share": 0.1212,
        "ended_mean_tokens": 60.8,
        "ended_max_tokens": 227.4,
        "ended_response_tokens": 60.8,
        "gold_chars": 9.6,
    },
    "mmlu": {
        "rows": 60,
        "units": 6,
        "closed": True,
        "knowledge_share": 0.0,
        "format_share": 0.4,
        "length_share": 0.0167,
        "harness_cut_share": 0.0167,
        "ended_mean_tokens": 3.7,
        "ended_max_tokens": 7.0,
        "ended_response_tokens": 3.7,
        "gold_chars": 0.0,
    },
    "nq_open": {
        "rows": 60,
        "units": 6,
        "closed": False,
        "knowledge_share": 0.6167,
        "format_share": 0.4833,
        "length_share": 0.05,
        "harness_cut_share": 0.0333,
        "ended_mean_tokens": 9.0,
        "ended_max_tokens": 26.0,
        "ended_response_tokens": 9.0,
        "gold_chars": 19.6,
    },
    "triviaqa": {
        "rows": 66,
        "units": 6,
        "closed": False,
        "knowledge_share": 0.4545,
        "format_share": 0.4394,
        "length_share": 0.0303,
        "harness_cut_share": 0.0303,
        "ended_mean_tokens": 6.6,
        "ended_max_tokens": 20.0,
        "ended_response_tokens": 6.6,
        "gold_chars": 26.5,
    },
}


@dataclass(frozen=True)
class Shape:
    """What the roofline needs of a model: parameters, KV-cache bytes per token (bf16) and layers."""

    params: float
    kv_bytes_per_token: float
    source: str
    layers: int = 32

    @classmethod
    def from_config(cls, cfg: dict[str, Any], source: str) -> Shape:
        hidden, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
        heads = cfg["num_attention_heads"]
        head_dim = cfg.get("head_dim") or hidden // heads
        kv_dim = cfg.get("num_key_value_heads", heads) * head_dim
        attention = hidden * heads * head_dim * 2 + hidden * kv_dim * 2
        mlp = 3 * hidden * cfg.get("intermediate_size", 4 * hidden)
        embeddings = cfg["vocab_size"] * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
        return cls(layers * (attention + mlp) + embeddings, 2 * layers * kv_dim * 2, source, layers)


# Llama-2-7B's shape: what a 7B-class model is assumed to be when its config.json is not at hand.
ASSUMED_7B = Shape.from_config(
    {
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32000,
    },
    "assumed 7B (Llama-2-7B shape; its config.json is not cached here)",
)


# Qwen3-32B's shape (its published config.json): the judge when its own config.json is not at hand.
ASSUMED_32B = Shape.from_config(
    {
        "hidden_size": 5120,
        "num_hidden_layers": 64,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "intermediate_size": 25600,
        "vocab_size": 151936,
    },
    "assumed 32B (Qwen3-32B shape; its config.json is not cached here)",
)


def model_shape(ref: str, revision: str, assumed: Shape = ASSUMED_7B) -> Shape:
    """The shape from the model's config.json: a local directory, or the Hugging Face cache
    (never downloads); the 7B assumption where neither has it."""
    local = Path(ref) / "config.json"
    path: Any = local if local.is_file() else None
    if path is None:
        try:
            from huggingface_hub import try_to_load_from_cache

            found = try_to_load_from_cache(ref, "config.json", revision=revision)
            path = Path(found) if isinstance(found, str) else None
        except ImportError:  # pragma: no cover - transformers depends on huggingface_hub
            path = None
    if path is None:
        return assumed
    cfg = json.loads(path.read_text(encoding="utf-8"))
    return Shape.from_config(cfg.get("text_config", cfg), f"{path}")


@dataclass(frozen=True)
class TaskLengths:
    """One task's sizes in tokens: the rows evaluated, mean lengths, the generation budget, and
    what a run measured (MEASURED): how rows end, and the cascade's LLM share per verdict kind."""

    rows: int
    prompt: float
    shot: float
    target: float
    budget: int
    option: float
    options: int
    source: str
    harness_budget: int = 0  # tokens of lm-evaluation-harness's reading of each response (harness_generation)
    length_share: float = 0.0  # rows cut at softeval's budget (they run to it under both bounds)
    harness_cut_share: float = 0.0  # those of them cut at the harness's budget too (they run to the larger)
    ended_mean: float = 0.0  # decoded tokens of a row that ends at a stop (both readings); 0: the target length
    ended_max: float = 0.0  # the longest such row (a batch's slowest, when none of its rows is cut)
    response: float = 0.0  # tokens of softeval's response of a row that ends (what the judge reads)
    knowledge_share: float = 1.0  # rows whose knowledge verdict goes to the LLM judge (cascade on)
    format_share: float = 1.0  # rows whose format verdict goes to the LLM judge (cascade on)
    gold: float = 0.0  # tokens of the gold and its aliases in the knowledge prompt; 0: the target length
    measured: bool = False

    @property
    def decode_budget(self) -> int:
        """Tokens a row decodes at most: until both readings have ended."""
        return max(self.budget, self.harness_budget)

    def decoded(self, bound: str) -> float:
        """Mean tokens a row decodes: its budget ("upper"), or realistic lengths ("realistic")."""
        if bound == "upper":
            return float(self.decode_budget)
        ended = min(self.ended_mean or self.target, self.decode_budget)
        cut_once = self.length_share - self.harness_cut_share
        return self.harness_cut_share * self.decode_budget + cut_once * self.budget + (1 - self.length_share) * ended

    def slowest(self, bound: str, rows: float) -> float:
        """Tokens until the slowest of `rows` rows has ended: the larger budget when a row is cut at
        both, else softeval's when one is cut at it, else the longest row that ends."""
        if bound == "upper":
            return float(self.decode_budget)
        rows = max(rows, 1)
        both = 1 - (1 - self.harness_cut_share) ** rows
        none = (1 - self.length_share) ** rows
        longest = min(self.ended_max or self.target, self.decode_budget)
        return both * self.decode_budget + (1 - both - none) * self.budget + none * longest

    def response_tokens(self, bound: str) -> float:
        """Mean tokens of softeval's response, the one the judge reads."""
        if bound == "upper":
            return float(self.budget)
        ended = min(self.response or self.target, self.budget)
        return self.length_share * self.budget + (1 - self.length_share) * ended


BOUNDS = ("realistic", "upper")
BOUND_TITLES = {
    "realistic": "Realistic lengths: rows stop at their stop string (lengths measured on a real model's run)",
    "upper": "Upper bound: every row decodes to its token budget",
}


def pooled_shares() -> tuple[float, float]:
    """The measured LLM shares over every measured task's rows (knowledge: open tasks only): what a
    task no run measured is assumed to send to the LLM."""
    open_rows = sum(m["rows"] for m in MEASURED.values() if not m["closed"])
    rows = sum(m["rows"] for m in MEASURED.values())
    knowledge = sum(m["rows"] * m["knowledge_share"] for m in MEASURED.values() if not m["closed"])
    fmt = sum(m["rows"] * m["format_share"] for m in MEASURED.values())
    return (knowledge / open_rows if open_rows else 1.0), (fmt / rows if rows else 1.0)


def with_measurements(lengths: TaskLengths, name: str) -> TaskLengths:
    """The task's measured lengths and cascade shares (MEASURED), else the pooled shares and the
    target length for a row that stops."""
    m = MEASURED.get(name)
    if m is None:
        knowledge, fmt = pooled_shares()
        return replace(lengths, knowledge_share=knowledge, format_share=fmt)
    return replace(
        lengths,
        length_share=m["length_share"],
        harness_cut_share=m["harness_cut_share"],
        ended_mean=m["ended_mean_tokens"],
        ended_max=m["ended_max_tokens"],
        response=m["ended_response_tokens"],
        knowledge_share=m["knowledge_share"],
        format_share=m["format_share"],
        gold=m["gold_chars"] / CHARS_PER_TOKEN,
        measured=True,
    )


def task_lengths(task: Task, limit: int | None, default_budget: int) -> TaskLengths:
    """A task's figures from its file's `cost` block (fails with the fix when it has none)."""
    cost = task.cost
    if cost is None:
        raise InputError(
            f"task {task.name}: no `cost` block in its task file; add one (test_rows, prompt_tokens, "
            "shot_tokens, target_tokens; see config/README.md) or pass --pilot with a pilot run's results"
        )
    budget = task.max_new_tokens
    if budget in (TRAIN_MAX, OPTIONS_MAX):
        if "budget_tokens" not in cost:
            raise InputError(f"task {task.name}: max_new_tokens is {budget}; add cost.budget_tokens to its file")
        budget = cost["budget_tokens"]
    rows = cost["test_rows"] if limit is None else min(limit, cost["test_rows"])
    return TaskLengths(
        rows=rows,
        prompt=float(cost["prompt_tokens"]),
        shot=float(cost["shot_tokens"]),
        target=float(cost["target_tokens"]),
        budget=int(budget or default_budget),
        option=float(cost.get("option_tokens", 0.0)),
        options=int(cost.get("options", 0)),
        source="task file (estimated lengths)",
        harness_budget=task.harness_generation.max_gen_toks if task.harness_generation else 0,
    )


def pilot_lengths(results: Path, task: str) -> dict[str, float]:
    """Mean prompt tokens of the zero-shot and few-shot units, measured on a pilot run's
    generation files (all models and roles, the real tokenizers and chat templates)."""
    folder = results / GENERATIONS
    prompts: dict[str, list[int]] = {"zero_shot": [], "few_shot": []}
    for path in sorted(folder.glob(f"*/*/{task}/*.jsonl")):
        unit = parse_unit_path(folder, path)
        if unit.method not in prompts:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            prompts[unit.method].append(int(json.loads(line)["prompt_tokens"]))
    if not prompts["zero_shot"]:
        raise InputError(f"{folder}: no zero_shot generations of task {task}; run the pilot first (see README)")
    means = {method: statistics.fmean(values) for method, values in prompts.items() if values}
    return {"prompt": means["zero_shot"], "few_shot": means.get("few_shot", means["zero_shot"])}


@dataclass
class Cost:
    """GPU-seconds by phase, summed over jobs."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, phase: str, value: float) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + value

    @property
    def hours(self) -> float:
        return sum(self.seconds.values()) / 3600


@dataclass(frozen=True)
class Roofline:
    """Seconds for compute-bound token work and for memory-bound decoding on one GPU."""

    gpu: GPU
    mfu: float
    bandwidth_efficiency: float

    def compute(self, flops: float) -> float:
        return flops / (self.gpu.tflops * 1e12 * self.mfu)

    def bytes(self, count: float) -> float:
        return count / (self.gpu.bandwidth_tb_s * 1e12 * self.bandwidth_efficiency)

    def decode(self, steps: float, shape: Shape, sequences: float, context: float) -> float:
        """`steps` decoding steps, each reading the weights (bf16) and `sequences` KV caches of
        `context` tokens on average."""
        return self.bytes(steps * (2 * shape.params + sequences * context * shape.kv_bytes_per_token))


def hf_step_floor(shape: Shape) -> float:
    """The least time an HF decoding step takes: its kernel launches (HF_STEP_S_PER_LAYER)."""
    return shape.layers * HF_STEP_S_PER_LAYER + HF_STEP_FIXED_S


def units_per_task(config: dict[str, Any]) -> int:
    """Evaluated units of one model x role x task: plain methods and one per soft-prompt step."""
    methods = config["evaluation"]["methods"]
    plain = len([m for m in methods if m != "soft_prompt"])
    return plain + (len(soft_prompt_steps(config["evaluation"]["tune"])) if "soft_prompt" in methods else 0)


def unit_prompts(config: dict[str, Any], lengths: TaskLengths) -> list[float]:
    """Mean prompt length of each evaluated unit of one model x role x task."""
    evaluation = config["evaluation"]
    methods = evaluation["methods"]
    k = evaluation["few_shot"]["k"]
    prompts = []
    if "zero_shot" in methods:
        prompts.append(lengths.prompt)
    if "few_shot" in methods:
        prompts.append(lengths.prompt + k * lengths.shot)
    if "soft_prompt" in methods:
        n_tokens = evaluation["tune"]["n_tokens"]
        prompts += [lengths.prompt + n_tokens] * len(soft_prompt_steps(config["evaluation"]["tune"]))
    return prompts


def evaluate_jobs(config: dict[str, Any]) -> int:
    """Evaluation jobs per model x role (each over every task): evaluate_soft_prompt when
    soft_prompt is a method, evaluate when another method is."""
    methods = config["evaluation"]["methods"]
    return ("soft_prompt" in methods) + any(m != "soft_prompt" for m in methods)


def gpu_jobs(config: dict[str, Any]) -> float:
    """Snakemake jobs per model x role x task: a task's share of the model x role's evaluation
    jobs and of its tune job (each loads the model once for every task)."""
    tune = 1 if "soft_prompt" in config["evaluation"]["methods"] else 0
    return (evaluate_jobs(config) + tune) / len(config["tasks"])


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
    config: dict[str, Any],
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
    evaluation = config["evaluation"]
    cost = Cost()
    cost.add("start", job_start_s * gpu_jobs(config))
    if backend == "vllm":
        cost.add("start", vllm_start_s * evaluate_jobs(config) / len(config["tasks"]))
    if "soft_prompt" in evaluation["methods"]:
        tune = evaluation["tune"]
        tokens = tune["steps"] * tune["batch_size"] * (tune["n_tokens"] + lengths.prompt + lengths.target)
        # forward (2N) + backward to the inputs only (2N: no weight gradients); checkpointing adds a forward
        per_token = 6 if tune.get("gradient_checkpointing") else 4
        cost.add("tune", roof.compute(per_token * shape.params * tokens))
    for prompt in unit_prompts(config, lengths):
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
    config: dict[str, Any], lengths: TaskLengths, closed: bool, roof: Roofline, bound: str = "upper", task: Any = None
) -> float:
    """Seconds of an LLM judge for one model x role x task: one prompt-only request (one-token
    verdict) per verdict the cascade sends on (knowledge on open tasks, format on all), each the
    prompt's fields and fixed text, less the shared instruction a vLLM server (openai) caches."""
    judge = config["evaluation"]["judge"]
    if judge["name"] not in ("hf", "openai"):
        return 0.0
    shape = model_shape(judge["model"], judge.get("revision", "main"), ASSUMED_32B)
    templates = judge_templates(config)
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
        requests = lengths.rows * units_per_task(config) * (shares[kind] if cascade else 1.0)
        seconds += roof.compute(2 * shape.params * requests * tokens)
    return seconds


@dataclass(frozen=True)
class PlanCost:
    """Per task: GPU-hours under each bound and backend (row[bound][backend]); the jobs and how
    the figures were made."""

    rows: list[dict[str, Any]]
    notes: list[str]

    def total(self, bound: str, backend: str) -> float:
        return sum(row[bound][backend].hours for row in self.rows)


def run_plan(config: dict[str, Any], task_dir: Path) -> Plan:
    """The workflow's plan of a checked config, its task files read from `task_dir`."""
    root = workflow_root()
    # paths relative to the folder plan-cost runs in, where the plan's task files are then read
    return Plan.from_config({**config, "task_dir": str(Path(task_dir).resolve())}, root, Path.cwd())


def model_jobs(plan: Plan, models: list[str]) -> int:
    """The plan's jobs that load one of these models (tune and evaluation jobs)."""
    return sum(1 for rule in MODEL_JOB_RULES for job in plan.jobs()[rule] if job["model"] in models)


def plan_cost(
    config: dict[str, Any],
    task_dir: Path,
    gpu: str = "h100-sxm",
    mfu: float = 0.4,
    bandwidth_efficiency: float = 0.6,
    vllm_concurrency: int = 256,
    job_start_s: float = 60.0,
    pilot: Path | None = None,
    vllm_start_s: float = VLLM_ENGINE_START_S,
) -> PlanCost:
    """The config's GPU-hours per task, bound and backend over the plan's units (checkpoint models;
    the zoo and random models are CPU jobs and are listed, not costed)."""
    if gpu not in GPUS:
        raise InputError(f"--gpu {gpu!r}: unknown; one of {', '.join(GPUS)}")
    roof = Roofline(GPUS[gpu], mfu, bandwidth_efficiency)
    evaluation = config["evaluation"]
    plan = run_plan(config, task_dir)
    checkpoints = plan.models_of_kind("checkpoint")
    others = [m for m in plan.models if m not in checkpoints]
    units = [(m, r, t) for m, r, t in plan.unit_triples() if m in checkpoints]
    shapes = {
        (m, r): model_shape(plan.model_ref(m, r), model_options(plan.entry(m), r)["revision"]) for m, r, _ in units
    }
    rows = []
    for name, task in plan.tasks.items():
        limit = evaluation.get("test_limit_per_task", {}).get(name, evaluation.get("test_limit"))
        lengths = with_measurements(task_lengths(task, limit, evaluation["generate"]["max_new_tokens"]), name)
        if pilot is not None:
            measured = pilot_lengths(pilot, name)
            k = evaluation["few_shot"]["k"]
            lengths = replace(
                lengths,
                prompt=measured["prompt"],
                shot=(measured["few_shot"] - measured["prompt"]) / k if k else 0.0,
                source=f"pilot run {pilot} (measured prompt lengths)",
            )
        row: dict[str, Any] = {
            "task": name,
            "rows": lengths.rows,
            "budget": lengths.budget,
            "lengths": lengths.source,
            "measured": lengths.measured,
            "judge_share": {"knowledge": lengths.knowledge_share, "format": lengths.format_share},
        }
        for bound in BOUNDS:
            row[bound] = {}
            for backend in ("hf", "vllm"):
                total = Cost()
                for model, role, _ in [u for u in units if u[2] == name]:
                    for phase, seconds in job_cost(
                        config,
                        lengths,
                        task.closed,
                        shapes[(model, role)],
                        roof,
                        backend,
                        vllm_concurrency,
                        job_start_s,
                        bound,
                        vllm_start_s,
                    ).seconds.items():
                        total.add(phase, seconds)
                    total.add("judge", judge_cost(config, lengths, task.closed, roof, bound, task))
                row[bound][backend] = total
        rows.append(row)
    assumed = sorted({f"{m}/{r}" for (m, r), s in shapes.items() if s is ASSUMED_7B})
    twinned = [m for m in checkpoints if m in plan.post_models]
    base_only = [m for m in checkpoints if m not in twinned]
    judge = evaluation["judge"]
    notes = [
        f"GPU: {roof.gpu.name}, {roof.gpu.tflops:g} TFLOP/s bf16 at {mfu:.0%} of peak, "
        f"{roof.gpu.bandwidth_tb_s:g} TB/s at {bandwidth_efficiency:.0%}",
        f"{len(checkpoints)} checkpoint models ({len(twinned)} with a post-trained twin), {len(shapes)} model x "
        f"role: {model_jobs(plan, checkpoints)} GPU jobs (the plan's tune and evaluation jobs; "
        f"{len(plan.tasks)} tasks, {units_per_task(config)} evaluated units each), "
        f"each starting in {job_start_s:g} s (CUDA, loading the model); under vLLM each evaluation job "
        f"also starts an engine ({vllm_start_s:g} s)",
        f"HF decoding: {evaluation['generate']['batch_size']} rows in flight, the next joining when a quarter "
        f"have ended ({HF_IN_FLIGHT:.0%} on average), every row of a unit in flight; "
        f"a step takes at least {HF_STEP_S_PER_LAYER * 1e3:.2f} ms a layer + {HF_STEP_FIXED_S * 1e3:g} ms "
        f"({hf_step_floor(ASSUMED_7B) * 1e3:.1f} ms for 32 layers, measured on an H200: benchmarks/README.md), "
        f"whatever its bytes; vLLM: up to {vllm_concurrency} sequences in flight, engine calls of "
        f"{VLLM_WINDOW:,} prompts drained to their slowest",
        "lengths: the upper bound runs every row to its budget (and to lm-evaluation-harness's 256 tokens where a "
        "task records the harness's reading); the realistic one stops rows after the lengths measured by "
        f"{MEASURED_SOURCE} (a row whose end no reading saw there runs to its budget), or after the task file's "
        "target length where no run measured the task",
    ]
    if judge["name"] in ("hf", "openai"):
        measured = ", ".join(
            f"{row['task']} {row['judge_share']['format']:.0%}"
            + ("" if plan.tasks[row["task"]].closed else f"/{row['judge_share']['knowledge']:.0%}")
            for row in rows
        )
        notes.append(
            "judge: "
            + (
                f"rule-first cascade (evaluation.judge.cascade): the LLM gets the verdicts the rule is not certain "
                f"of, the share measured by {MEASURED_SOURCE} (format/knowledge per task: {measured})"
                if judge.get("cascade", True)
                else "cascade off: the LLM judges every verdict"
            )
            + (
                "; the judge server caches the shared instruction (vLLM prefix caching)"
                if judge["name"] == "openai"
                else "; the hf judge computes every prompt whole"
            )
            + "; its verdict cache's savings on repeated responses are not counted"
        )
    if base_only:
        notes.append(f"base only (no post-trained twin, no post jobs): {', '.join(base_only)}")
    if assumed:
        notes.append(f"shape {ASSUMED_7B.source}: {len(assumed)} of {len(shapes)} checkpoints")
    if others:
        notes.append(f"not costed (CPU models): {', '.join(others)}")
    return PlanCost(rows, notes)


def cost_table(plan: PlanCost) -> str:
    """Markdown: the two bounds, each per task: rows, budget and GPU-hours by phase under each
    backend; totals; then the notes."""
    out = [
        f"GPU-hours: realistic lengths **{plan.total('realistic', 'hf'):.0f}** (HF) / "
        f"**{plan.total('realistic', 'vllm'):.0f}** (vLLM); every row to its budget "
        f"**{plan.total('upper', 'hf'):.0f}** (HF) / **{plan.total('upper', 'vllm'):.0f}** (vLLM)",
        "",
    ]
    for bound in BOUNDS:
        out += [
            f"### {BOUND_TITLES[bound]}",
            "",
            "| task | rows | budget | start h (HF) | start h (vLLM) | tune h | prompts h | options h | judge h "
            "| decode h (HF) | decode h (vLLM) | total h (HF) | total h (vLLM) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in plan.rows:
            hf, vllm = row[bound]["hf"], row[bound]["vllm"]
            out.append(
                f"| {row['task']} | {row['rows']:,} | {row['budget']} | {hf.seconds.get('start', 0) / 3600:.1f} | "
                f"{vllm.seconds.get('start', 0) / 3600:.1f} | {hf.seconds.get('tune', 0) / 3600:.1f} | "
                f"{hf.seconds.get('prompts', 0) / 3600:.1f} | {hf.seconds.get('options', 0) / 3600:.1f} | "
                f"{hf.seconds.get('judge', 0) / 3600:.1f} | {hf.seconds.get('decode', 0) / 3600:.1f} | "
                f"{vllm.seconds.get('decode', 0) / 3600:.1f} | {hf.hours:.1f} | {vllm.hours:.1f} |"
            )
        out += [
            f"| **all** | | | | | | | | | | | **{plan.total(bound, 'hf'):.0f}** | "
            f"**{plan.total(bound, 'vllm'):.0f}** |",
            "",
        ]
    return "\n".join(out + [f"- {note}" for note in plan.notes]) + "\n"
