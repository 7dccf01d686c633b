"""How far to trust a judge: its verdicts against hand-labelled examples.

config/judges/validation.jsonl holds responses to questions of the world tasks, each with a
hand-decided knowledge and format label, across the styles that break judges (near-miss
numbers, multiple answers, refusals, non-English, responses that address the judge, ...).
A judge's agreement is reported per label as accuracy and Cohen's kappa, overall and per
category, with every disagreement listed.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.data.tasks import Task, load_task
from softeval.io import read_utf8
from softeval.judges.rule import Judge
from softeval.schema import InputError

LABELS = ("knowledge", "format")
FIELDS = ("id", "task", "category", "question", "answer", "response", *LABELS)


def load_validation(path: Path) -> list[dict[str, Any]]:
    rows = []
    for number, line in enumerate(read_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}:{number}: not JSON ({err.msg}); fix the line") from None
        missing = [f for f in FIELDS if f not in row]
        if missing:
            raise InputError(f"{path}:{number}: field '{missing[0]}' is missing; every row needs {', '.join(FIELDS)}")
        rows.append(row)
    return rows


def validation_tasks(rows: list[dict[str, Any]], task_dir: Path | str) -> dict[str, Task]:
    """The task file of every task the labelled rows ask about (world and real benchmarks)."""
    return {name: load_task(task_dir, name) for name in sorted({row["task"] for row in rows})}


def cohen_kappa(a: list[bool], b: list[bool]) -> float:
    """Agreement beyond chance between two binary labelings (1 = perfect, 0 = chance)."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


def validate_judge(judge: Judge, tasks: dict[str, Task], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Verdicts of `judge` on every row, compared with the hand labels."""
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["task"] not in tasks:
            raise InputError(f"validation row {row['id']}: unknown task {row['task']!r}")
        by_task[row["task"]].append(row)
    records = []
    for name, group in by_task.items():
        verdicts = judge.judge(tasks[name], group, [row["response"] for row in group])
        for row, verdict in zip(group, verdicts, strict=True):
            records.append(
                {
                    "id": row["id"],
                    "task": name,
                    "category": row["category"],
                    **{f"{label}_gold": bool(row[label]) for label in LABELS},
                    **{f"{label}_judge": bool(getattr(verdict, label)) for label in LABELS},
                }
            )
    table = pd.DataFrame(records)
    summary: dict[str, Any] = {"judge": judge.name, "n": len(table)}
    for label in LABELS:
        gold, said = table[f"{label}_gold"].tolist(), table[f"{label}_judge"].tolist()
        summary[label] = {
            "accuracy": sum(x == y for x, y in zip(gold, said, strict=True)) / len(gold),
            "kappa": cohen_kappa(gold, said),
        }
    table["agree"] = (table["knowledge_gold"] == table["knowledge_judge"]) & (
        table["format_gold"] == table["format_judge"]
    )
    summary["per_category"] = table.groupby("category")["agree"].mean().round(3).to_dict()
    summary["disagreements"] = table[~table["agree"]].drop(columns="agree").to_dict(orient="records")
    return summary
