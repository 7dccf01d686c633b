"""plan-cost's answer: the plan of a config, its GPU-hours per task, bound and backend, and the table.

`plan_cost` prices the checkpoint models' units of the run plan (the zoo and random models are
CPU jobs: listed, not costed); `cost_table` writes the markdown `softeval plan-cost` prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from softeval.config import model_options
from softeval.names import FEW_SHOT
from softeval.plan import MODEL_JOB_RULES, Plan
from softeval.plan_cost.costs import Cost, job_cost, judge_cost, units_per_task
from softeval.plan_cost.lengths import BOUNDS, MEASURED_SOURCE, pilot_lengths, task_lengths, with_measurements
from softeval.plan_cost.roofline import (
    ASSUMED_7B,
    GPUS,
    HF_IN_FLIGHT,
    HF_STEP_FIXED_S,
    HF_STEP_S_PER_LAYER,
    VLLM_ENGINE_START_S,
    Roofline,
    hf_step_floor,
    model_shape,
)
from softeval.schema import InputError
from softeval.settings import VLLM_WINDOW
from softeval.shipped import workflow_root

BOUND_TITLES = {
    "realistic": "Realistic lengths: rows stop at their stop string (lengths measured on a real model's run)",
    "upper": "Upper bound: every row decodes to its token budget",
}


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
    plan = run_plan(config, task_dir)
    evaluation = plan.evaluation
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
                shot=(measured[FEW_SHOT] - measured["prompt"]) / k if k else 0.0,
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
                        plan,
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
                    total.add("judge", judge_cost(plan, lengths, task.closed, roof, bound, task))
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
        f"{len(plan.tasks)} tasks, {units_per_task(plan)} evaluated units each), "
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
