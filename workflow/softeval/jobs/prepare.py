"""`softeval prepare` (rule prepare_task): a task's train, test and few-shot splits."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.data.splits import prepare_task
from softeval.jobs.arguments import task_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task", required=True, help="the task file (config/tasks/<name>.yaml)")
    parser.add_argument("--world", help="the world file (world tasks)")
    parser.add_argument("--source", choices=["hub", "mirror"], default="hub", help="real tasks: hub or local mirror")
    parser.add_argument("--mirror", help="the local mirror folder (--source mirror)")
    parser.add_argument("--test-limit", type=int, help="pilot run: keep a seeded sample of this many test examples")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pilot sample")
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    world = Path(args.world) if args.world else None
    mirror = Path(args.mirror) if args.mirror else None
    prepare_task(task_file(args.task), Path(args.out), world, args.source, mirror, args.test_limit, args.seed)
