"""`softeval posttrain` (rule posttrain): a zoo base model post-trained (SFT) into its twin."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.io import check_slug
from softeval.jobs.arguments import add_settings, add_zoo_inputs, data_dirs, task_files
from softeval.settings import PosttrainSettings
from softeval.zoo.training import posttrain


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, PosttrainSettings)
    add_zoo_inputs(parser, world=False, data=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--base", required=True)
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    check_slug(args.name, "model")
    settings = PosttrainSettings.parse(args.settings, "posttrain")
    tasks = task_files(args.tasks)
    posttrain(
        name=args.name,
        base_dir=Path(args.base),
        tasks=tasks,
        data_dirs=data_dirs(args.data, tasks),
        training=settings.posttrain,
        seed=settings.seed,
        threads=args.threads,
        out_dir=Path(args.out),
    )
