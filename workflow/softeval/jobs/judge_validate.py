"""`softeval judge validate` (rule judge_validation): how far to trust a judge, as its accuracy
and Cohen's kappa on the hand-labelled validation set, with every disagreement listed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.publish import write_table
from softeval.io import atomic_write_json
from softeval.jobs.arguments import add_judge_gpus, add_settings
from softeval.judges.factory import make_judge
from softeval.judges.validation import LABELS, load_validation, validate_judge, validation_tasks
from softeval.settings import JudgeSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, JudgeSettings, default='{"name": "rule"}')
    parser.add_argument("--validation", default="config/judges/validation.jsonl")
    parser.add_argument("--task-dir", default="config/tasks")
    parser.add_argument("--out", help="output stem: writes <out>.csv, .md, .tex and .json")
    add_judge_gpus(parser)


def run(args: argparse.Namespace) -> None:
    rows = load_validation(Path(args.validation))
    settings = JudgeSettings.parse(args.settings, "judge validate")
    summary = validate_judge(make_judge(settings), validation_tasks(rows, args.task_dir), rows)
    table = agreement_table(summary)
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    for row in summary["disagreements"]:
        print(
            f"disagrees: {row['id']} ({row['category']}): "
            + ", ".join(f"{label} judge={row[label + '_judge']} gold={row[label + '_gold']}" for label in LABELS)
        )
    if args.out:
        write_table(table, Path(args.out), "Agreement of the judge with the hand-labelled validation set")
        atomic_write_json(Path(args.out).with_suffix(".json"), summary)


def agreement_table(summary: dict[str, Any]) -> pd.DataFrame:
    """One row per label: the judge, how many examples, its accuracy and kappa."""
    return pd.DataFrame(
        [{"judge": summary["judge"], "label": label, "n": summary["n"], **summary[label]} for label in LABELS]
    )
