"""`softeval mirror`: real tasks' splits downloaded into a local mirror (on a machine with
internet), for runs on machines without it (`prepare --source mirror`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.data.sources import write_mirror
from softeval.data.tasks import load_task


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", nargs="+", required=True)
    parser.add_argument("--task-dir", default="config/tasks")
    parser.add_argument("--out", required=True, help="mirror folder; writes <out>/<task>/<role>.parquet + MIRROR.json")


def run(args: argparse.Namespace) -> None:
    tasks = [load_task(args.task_dir, name) for name in args.task]
    for task in tasks:
        record = write_mirror(task, Path(args.out))
        for role, info in record.items():
            print(f"{task.name} {role}: {info['rows']} rows from {info['path']} at commit {info['commit']}")
