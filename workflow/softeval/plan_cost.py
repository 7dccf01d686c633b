"""`softeval plan-cost`: what a config costs in GPU-hours, before anything runs.

The jobs are the workflow's own: the run plan's (softeval.plan.Plan) model x role x task units
and its tune and evaluation jobs, so a model without a post-trained twin costs its base role
only (one tuning run per model, role and task when soft_prompt is a method; zero-shot and
few-shot units and one soft-prompt unit per evaluated step; closed tasks also score their
options).
Token counts come from those jobs and the token budgets (every response is assumed to run to
its budget, and to lm-evaluation-harness's 256 tokens where its task file records the harness's
reading, so generation is an upper bound); lengths come from the task files' `cost` block
(published test sizes, estimated mean lengths) or, with --pilot, from a pilot run's own
generation files (the real tokenizer's prompt lengths). Time is a roofline: prompt processing,
option scoring and tuning are compute-bound at a stated fraction of the GPU's peak; decoding is
bound by memory bandwidth (each decoding step reads the weights once and every sequence's KV
cache). The HF backend decodes fixed batches of `generate.batch_size` rows until the batch's
budget is spent; vLLM keeps `--vllm-concurrency` sequences in flight. Tuning and option scoring
run on the HF path under both backends.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from softeval.config import model_options
from softeval.data.tasks import OPTIONS_MAX, TRAIN_MAX, Task
from softeval.layout import GENERATIONS, parse_unit_path
from softeval.plan import MODEL_JOB_RULES, Plan, soft_prompt_steps
from softeval.schema import InputError
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


@dataclass(frozen=True)
class Shape:
    """What the roofline needs of a model: parameters and KV-cache bytes per token (bf16)."""

    params: float
    kv_bytes_per_token: float
    source: str

    @classmethod
    def from_config(cls, cfg: dict[str, Any], source: str) -> Shape:
        hidden, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
        heads = cfg["num_attention_heads"]
        head_dim = cfg.get("head_dim") or hidden // heads
        kv_dim = cfg.get("num_key_value_heads", heads) * head_dim
        attention = hidden * heads * head_dim * 2 + hidden * kv_dim * 2
        mlp = 3 * hidden * cfg.get("intermediate_size", 4 * hidden)
        embeddings = cfg["vocab_size"] * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
        return cls(layers * (attention + mlp) + embeddings, 2 * layers * kv_dim * 2, source)


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
JUDGE_TEMPLATE_TOKENS = 200  # the judge's instructions around question, gold and response (config/judges)


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
    """One task's sizes in tokens: the rows evaluated, mean lengths and the generation budget."""

    rows: int
    prompt: float
    shot: float
    target: float
    budget: int
    option: float
    options: int
    source: str
    harness_budget: int = 0  # tokens of lm-evaluation-harness's reading of each response (harness_generation)


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

    def decode(self, steps: float, shape: Shape, sequences: float, context: float) -> float:
        """`steps` decoding steps, each reading the weights (bf16) and `sequences` KV caches of
        `context` tokens on average."""
        bytes_per_step = 2 * shape.params + sequences * context * shape.kv_bytes_per_token
        return steps * bytes_per_step / (self.gpu.bandwidth_tb_s * 1e12 * self.bandwidth_efficiency)


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


def gpu_jobs(config: dict[str, Any]) -> float:
    """Snakemake jobs per model x role x task: evaluate_soft_prompt[_closed] when soft_prompt is a
    method, evaluate[_closed] when another method is, and a share of the model x role's one tune job."""
    methods = config["evaluation"]["methods"]
    tune_share = 1 / len(config["tasks"]) if "soft_prompt" in methods else 0.0
    return ("soft_prompt" in methods) + any(m != "soft_prompt" for m in methods) + tune_share


def job_cost(
    config: dict[str, Any],
    lengths: TaskLengths,
    closed: bool,
    shape: Shape,
    roof: Roofline,
    backend: str,
    concurrency: int,
    job_start_s: float,
) -> Cost:
    """One model x role x task: its jobs' start (loading the model), tuning and every unit's evaluation."""
    evaluation = config["evaluation"]
    cost = Cost()
    cost.add("start", job_start_s * gpu_jobs(config))
    if "soft_prompt" in evaluation["methods"]:
        tune = evaluation["tune"]
        tokens = tune["steps"] * tune["batch_size"] * (tune["n_tokens"] + lengths.prompt + lengths.target)
        # forward (2N) + backward to the inputs only (2N: no weight gradients); checkpointing adds a forward
        per_token = 6 if tune.get("gradient_checkpointing") else 4
        cost.add("tune", roof.compute(per_token * shape.params * tokens))
    batch = evaluation["generate"]["batch_size"]
    for prompt in unit_prompts(config, lengths):
        cost.add("prompts", roof.compute(2 * shape.params * lengths.rows * prompt))
        # a row runs until softeval's reading and the harness's have ended: one pass on the HF
        # backend; on vLLM a continuation of softeval's own tokens where the harness reads further,
        # so each row decodes the larger budget there too (its prefix cache saves the prompt)
        decode = max(lengths.budget, lengths.harness_budget)
        context = prompt + decode / 2
        if backend == "vllm":  # as many sequences as its KV-cache memory holds, at most `concurrency`
            vllm = evaluation["generate"].get("vllm", {})
            free = roof.gpu.memory_gb * 1e9 * vllm.get("gpu_memory_utilization", 0.85) - 2 * shape.params
            fits = int(free // (context * shape.kv_bytes_per_token))
            if fits < 1:
                raise InputError(f"the model's weights and one sequence do not fit in {roof.gpu.name}'s memory")
            sequences = min(concurrency, lengths.rows, fits)
            steps = lengths.rows * decode / sequences
        else:
            sequences = min(batch, lengths.rows)
            steps = -(-lengths.rows // batch) * decode
        cost.add("decode", roof.decode(steps, shape, sequences, context))
        if closed:  # every option scored after the cached prompt
            cost.add("options", roof.compute(2 * shape.params * lengths.rows * lengths.options * lengths.option))
    return cost


def judge_cost(config: dict[str, Any], lengths: TaskLengths, closed: bool, roof: Roofline) -> float:
    """Seconds of an LLM judge for one model x role x task: one prompt-only request (one-token
    verdict) per response and question, knowledge and format for open tasks, format for closed."""
    judge = config["evaluation"]["judge"]
    if judge["name"] not in ("hf", "openai"):
        return 0.0
    shape = model_shape(judge["model"], judge.get("revision", "main"), ASSUMED_32B)
    tokens = JUDGE_TEMPLATE_TOKENS + lengths.prompt + lengths.budget
    requests = lengths.rows * units_per_task(config) * (1 if closed else 2)
    return roof.compute(2 * shape.params * requests * tokens)


@dataclass(frozen=True)
class PlanCost:
    """Per task: GPU-hours under each backend; the jobs and how the figures were made."""

    rows: list[dict[str, Any]]
    notes: list[str]


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
) -> PlanCost:
    """The config's GPU-hours per task and backend over the plan's units (checkpoint models; the
    zoo and random models are CPU jobs and are listed, not costed)."""
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
        lengths = task_lengths(task, limit, evaluation["generate"]["max_new_tokens"])
        if pilot is not None:
            measured = pilot_lengths(pilot, name)
            k = evaluation["few_shot"]["k"]
            lengths = replace(
                lengths,
                prompt=measured["prompt"],
                shot=(measured["few_shot"] - measured["prompt"]) / k if k else 0.0,
                source=f"pilot run {pilot} (measured prompt lengths)",
            )
        row: dict[str, Any] = {"task": name, "rows": lengths.rows, "budget": lengths.budget, "lengths": lengths.source}
        for backend in ("hf", "vllm"):
            total = Cost()
            for model, role, _ in [u for u in units if u[2] == name]:
                for phase, seconds in job_cost(
                    config, lengths, task.closed, shapes[(model, role)], roof, backend, vllm_concurrency, job_start_s
                ).seconds.items():
                    total.add(phase, seconds)
                total.add("judge", judge_cost(config, lengths, task.closed, roof))
            row[backend] = total
        rows.append(row)
    assumed = sorted({f"{m}/{r}" for (m, r), s in shapes.items() if s is ASSUMED_7B})
    twinned = [m for m in checkpoints if m in plan.post_models]
    base_only = [m for m in checkpoints if m not in twinned]
    notes = [
        f"GPU: {roof.gpu.name}, {roof.gpu.tflops:g} TFLOP/s bf16 at {mfu:.0%} of peak, "
        f"{roof.gpu.bandwidth_tb_s:g} TB/s at {bandwidth_efficiency:.0%}",
        f"{len(checkpoints)} checkpoint models ({len(twinned)} with a post-trained twin), {len(shapes)} model x "
        f"role: {model_jobs(plan, checkpoints)} GPU jobs (the plan's tune and evaluation jobs; "
        f"{len(plan.tasks)} tasks, {units_per_task(config)} evaluated units each), "
        f"each starting in {job_start_s:g} s (CUDA, loading the model)",
        "generation is an upper bound: every response runs to its budget (and to lm-evaluation-harness's "
        "256 tokens where a task records the harness's reading); the judge reads every response "
        "at its budget (its verdict cache's savings on repeated responses are not counted)",
    ]
    if base_only:
        notes.append(f"base only (no post-trained twin, no post jobs): {', '.join(base_only)}")
    if assumed:
        notes.append(f"shape {ASSUMED_7B.source}: {len(assumed)} of {len(shapes)} checkpoints")
    if others:
        notes.append(f"not costed (CPU models): {', '.join(others)}")
    return PlanCost(rows, notes)


def cost_table(plan: PlanCost) -> str:
    """Markdown: per task, rows, budget and GPU-hours by phase under each backend; totals."""
    lines = [
        "| task | rows | budget | start h | tune h | prompts h | options h | judge h | decode h (HF) "
        "| decode h (vLLM) | total h (HF) | total h (vLLM) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    sums = {"hf": 0.0, "vllm": 0.0}
    for row in plan.rows:
        hf, vllm = row["hf"].seconds, row["vllm"].seconds
        sums["hf"] += row["hf"].hours
        sums["vllm"] += row["vllm"].hours
        lines.append(
            f"| {row['task']} | {row['rows']:,} | {row['budget']} | {hf.get('start', 0) / 3600:.1f} | "
            f"{hf.get('tune', 0) / 3600:.1f} | {hf.get('prompts', 0) / 3600:.1f} | {hf.get('options', 0) / 3600:.1f} | "
            f"{hf.get('judge', 0) / 3600:.1f} | {hf.get('decode', 0) / 3600:.1f} | "
            f"{vllm.get('decode', 0) / 3600:.1f} | {row['hf'].hours:.1f} | {row['vllm'].hours:.1f} |"
        )
    lines.append(f"| **all** | | | | | | | | | | **{sums['hf']:.0f}** | **{sums['vllm']:.0f}** |")
    return "\n".join(lines + [""] + [f"- {note}" for note in plan.notes]) + "\n"
