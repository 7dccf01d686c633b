"""`softeval judge run` (rule judge): per-example verdicts (knowledge, format, strict) for a unit's
generations.

Open tasks take all three verdicts from the judge. Closed tasks take knowledge from the
option log-likelihoods (the likeliest option is the gold one) and format/strict from the
judge; the judge's "gold mentioned" verdict is kept beside it. Tasks that name
lm-evaluation-harness's scores (softeval.judges.harness) get them per example too ("lm_eval"; its
likelihood metrics over softeval's own continuations, "options").

Each generation's stop reason goes to the judge, so that a response cut at its token budget
before an answer is not formatted; every score row records why a response is degenerate
("degenerate": the reason, or null). A plug-in judge whose `judge` takes no `stop_reasons` is
called without them (docs/extending.md).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.io import atomic_write_json, atomic_write_jsonl, read_jsonl
from softeval.jobs.arguments import add_judge_gpus, add_settings, add_task, task_file
from softeval.judges.factory import judge_settings, make_judge, prompts_file
from softeval.judges.harness import harness_scores, option_scores
from softeval.judges.rule import Judge, Verdict
from softeval.layout import meta_path
from softeval.provenance import file_sha256, provenance
from softeval.schema import InputError
from softeval.settings import JudgeSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_task(parser)
    add_settings(parser, JudgeSettings)
    parser.add_argument("--generations", nargs="+", required=True)
    parser.add_argument("--logliks", nargs="*", default=[], help="closed tasks: one per generation file")
    parser.add_argument("--out", nargs="+", required=True)
    add_judge_gpus(parser)


def run(args: argparse.Namespace) -> None:
    run_judge(
        task=task_file(args.task),
        data_dir=Path(args.data),
        settings=JudgeSettings.parse(args.settings, "judge run"),
        generations=[Path(p) for p in args.generations],
        logliks=[Path(p) for p in args.logliks],
        outs=[Path(p) for p in args.out],
    )


def read_rows(path: Path, ids: list[str], what: str) -> list[dict[str, Any]]:
    """Rows of a JSONL artifact, checked to cover exactly the test examples, in order."""
    rows = read_jsonl(path, what)
    if [row.get("id") for row in rows] != ids:
        raise InputError(
            f"{path}: {what} rows do not match the test split ({len(rows)} rows for {len(ids)} examples); "
            "delete it so the workflow recomputes it"
        )
    return rows


def harness_response(row: dict[str, Any], path: Path) -> str:
    """The harness's reading of the row's continuation, which its lm_eval columns score."""
    if "harness_response" not in row:
        raise InputError(
            f"{path}: row {row.get('id')!r} has no harness_response (generated before softeval recorded "
            "lm-evaluation-harness's own response, or by another tool); delete the file so the workflow "
            "regenerates it"
        )
    return row["harness_response"]


def takes_stop_reasons(judge: Judge) -> bool:
    """Whether the judge's `judge` method accepts `stop_reasons` (by name, or as **kwargs): the
    built-in judges do; a plug-in written before it was part of the protocol need not."""
    try:
        parameters = inspect.signature(judge.judge).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin or C extension): do not guess
        return False
    return any(p.name == "stop_reasons" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def judge_rows(
    judge: Judge, task: Task, examples: list[dict[str, Any]], rows: list[dict[str, Any]], kinds: Sequence[str]
) -> list[Verdict]:
    """The judge's verdicts on the generation rows, given their stop reasons where it takes them
    (a row of a file written before softeval recorded them has none: null)."""
    responses = [row["response"] for row in rows]
    if not takes_stop_reasons(judge):
        return judge.judge(task, examples, responses, kinds)
    return judge.judge(task, examples, responses, kinds, stop_reasons=[row.get("stop_reason") for row in rows])


def run_judge(
    *,
    task: Task,
    data_dir: Path,
    settings: JudgeSettings | str,
    generations: list[Path],
    logliks: list[Path],
    outs: list[Path],
) -> None:
    if len(generations) != len(outs) or (task.closed and len(logliks) != len(outs)):
        raise InputError("judge: give one output per generation file (and one log-likelihood file each, closed tasks)")
    judge = make_judge(settings)
    test = [dict(row) for row in load_split(data_dir, "test")]
    ids = [example["id"] for example in test]
    # closed tasks take knowledge from the option likelihoods: ask the judge for format only
    kinds = ("format",) if task.closed else ("knowledge", "format")
    for index, (generation_path, out) in enumerate(zip(generations, outs, strict=True)):
        rows = read_rows(generation_path, ids, "generation")
        verdicts = judge_rows(judge, task, test, rows, kinds)
        options = read_rows(logliks[index], ids, "log-likelihood") if task.closed else None
        scored = []
        for k, (example, row, verdict) in enumerate(zip(test, rows, verdicts, strict=True)):
            record = {
                "id": example["id"],
                "method": row["method"],
                "step": row["step"],
                "judge": verdict.judge,
                "knowledge": verdict.knowledge,
                "format": verdict.format,
                "strict": verdict.strict,
                "degenerate": getattr(verdict, "degenerate", None),  # why not formatted, whatever the pattern says
                "gold": task.target(example).strip(),
                "aliases": list(example.get("aliases") or []),
                "response": row["response"],
                "knowledge_from": "judge",
            }
            if example.get("entity") is not None:  # the world's country it asks about: the resampling item
                record["entity"] = example["entity"]
            if "solution" in example:  # the gold is a worked solution: its final answer, for the reader
                record["answer"] = example["answer"]
            if options is not None:
                record |= {
                    "knowledge": options[k]["chosen"] == example["label"],
                    "knowledge_normalized": options[k]["chosen_normalized"] == example["label"],
                    "mentions_gold": verdict.knowledge,
                    "knowledge_from": "loglik",
                }
            if task.harness_generation is not None:
                record["lm_eval"] = harness_scores(task, example, harness_response(row, generation_path))
            if options is not None and (option_metrics := option_scores(task, example, options[k])):
                record["options"] = option_metrics
            scored.append(record)
        atomic_write_jsonl(out, scored)
    for out, generation in zip(outs, generations, strict=True):  # each scores file's meta, once all exist
        atomic_write_json(meta_path(out), scores_provenance(task, judge_settings(settings), generation))


def scoring_rules(task: Task) -> dict[str, Any]:
    """What in a task file decides its verdicts (a change here changes scores; the wording of
    its prompt does not reach them directly)."""
    return {
        "kind": task.kind,
        "target": task.target_template,
        "format": task.format_pattern.pattern if task.format_pattern is not None else None,
        "extract": task.extract_pattern.pattern if task.extract_pattern is not None else "last_boxed",
        "answer_type": task.answer_type,
        "harness": list(task.harness),
    }


def scores_provenance(task: Task, settings: JudgeSettings, generations: Path) -> dict[str, Any]:
    """A scores file's meta: which judge (name; an LLM judge's model and its prompt file's sha256),
    the sha256 of the task's scoring rules, and the generation file judged."""
    judge: dict[str, Any] = {"name": settings.name}
    if settings.name != "rule":
        prompts = prompts_file(settings)
        judge |= {"model": settings.model, "prompts": str(prompts), "prompts_sha256": file_sha256(prompts)}
        judge["cascade"] = settings.cascade
    rules = scoring_rules(task)
    params = {
        "judge": judge,
        "task": task.name,
        "task_version": task.version,
        "scoring_sha256": hashlib.sha256(json.dumps(rules, sort_keys=True).encode()).hexdigest(),
        "generations": str(generations),
        "generations_sha256": file_sha256(generations),
    }
    return provenance(params)
