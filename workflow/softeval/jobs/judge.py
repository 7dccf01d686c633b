"""The judge job: per-example verdicts (knowledge, format, strict) for a unit's generations.

Open tasks take all three verdicts from the judge. Closed tasks take knowledge from the
option log-likelihoods (the likeliest option is the gold one) and format/strict from the
judge; the judge's "gold mentioned" verdict is kept beside it. Tasks that name
lm-evaluation-harness's scores (softeval.judges.harness) get them per example too ("lm_eval"; its
likelihood metrics over softeval's own continuations, "options").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from softeval.data.splits import load_split
from softeval.data.tasks import Task
from softeval.io import atomic_write_jsonl, read_jsonl
from softeval.judges.factory import make_judge
from softeval.judges.harness import harness_scores, option_scores
from softeval.schema import InputError
from softeval.settings import JudgeSettings


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
        verdicts = judge.judge(task, test, [row["response"] for row in rows], kinds)
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
                "gold": task.target(example).strip(),
                "aliases": list(example.get("aliases") or []),
                "response": row["response"],
                "knowledge_from": "judge",
            }
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
