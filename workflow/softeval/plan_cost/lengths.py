"""A task's sizes in tokens for plan-cost: its file's `cost` block, a pilot run's prompt lengths,
and what a real run measured (MEASURED: how rows end, the judge cascade's LLM share).

Two bounds, the same jobs (`BOUNDS`): every row decoding to its token budget ("upper"), and
realistic lengths, rows stopping after the measured lengths ("realistic"); `TaskLengths` says
what a row decodes under each.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from softeval.data.tasks import OPTIONS_MAX, TRAIN_MAX, Task
from softeval.layout import GENERATIONS, parse_unit_path
from softeval.names import FEW_SHOT, ZERO_SHOT
from softeval.schema import InputError

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
    prompts: dict[str, list[int]] = {ZERO_SHOT: [], FEW_SHOT: []}
    for path in sorted(folder.glob(f"*/*/{task}/*.jsonl")):
        unit = parse_unit_path(folder, path)
        if unit.method not in prompts:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            prompts[unit.method].append(int(json.loads(line)["prompt_tokens"]))
    if not prompts[ZERO_SHOT]:
        raise InputError(f"{folder}: no zero_shot generations of task {task}; run the pilot first (see README)")
    means = {method: statistics.fmean(values) for method, values in prompts.items() if values}
    return {"prompt": means[ZERO_SHOT], FEW_SHOT: means.get(FEW_SHOT, means[ZERO_SHOT])}
