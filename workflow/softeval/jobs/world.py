"""`softeval world` (rule build_world): the synthetic world the zoo and the world tasks are made of."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.data.world import generate_world
from softeval.jobs.arguments import add_settings
from softeval.settings import WorldSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, WorldSettings)
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    settings = WorldSettings.parse(args.settings, "world")
    generate_world(settings.n_entities, settings.test_fraction, settings.seed).save(Path(args.out))
