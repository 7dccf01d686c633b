"""`softeval pretrain` (rule pretrain): one zoo base model, pre-trained on its corpus of the world."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.io import check_slug
from softeval.jobs.arguments import add_settings, add_zoo_inputs, task_files
from softeval.settings import PretrainSettings
from softeval.zoo.corpus import CorpusStyle, Recipe
from softeval.zoo.training import pretrain


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, PretrainSettings)
    add_zoo_inputs(parser, world=True, data=False)
    parser.add_argument("--name", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    check_slug(args.name, "model")
    settings = PretrainSettings.parse(args.settings, "pretrain")
    pretrain(
        name=args.name,
        world_path=Path(args.world),
        tasks=task_files(args.tasks),
        tokenizer_dir=Path(args.tokenizer),
        recipe=Recipe(**settings.recipe),
        style=CorpusStyle(**settings.corpus),
        size=settings.size,
        training=settings.pretrain,
        seed=settings.seed,
        threads=args.threads,
        out_dir=Path(args.out),
    )
