"""`softeval random-model` (rule random_model): a randomly initialised Llama-style model, for smoke runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.jobs.arguments import add_settings
from softeval.names import ROLES
from softeval.settings import RandomModelSettings
from softeval.zoo.random_model import build_random_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, RandomModelSettings)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--role", choices=list(ROLES), required=True)
    parser.add_argument("--chat-template", action="store_true", help="give the tokenizer a ChatML chat template")
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    settings = RandomModelSettings.parse(args.settings, "random-model")
    build_random_model(settings, Path(args.tokenizer), Path(args.out), args.role, args.chat_template)
