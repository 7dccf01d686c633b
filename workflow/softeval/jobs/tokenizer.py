"""`softeval tokenizer` (rule train_tokenizer): the zoo tokenizer, trained on the world's text."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.data.world import World
from softeval.jobs.arguments import add_settings, add_zoo_inputs, task_files
from softeval.settings import TokenizerSettings
from softeval.zoo.corpus import tokenizer_corpus
from softeval.zoo.tokenizer import save_tokenizer, train_tokenizer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, TokenizerSettings)
    add_zoo_inputs(parser, world=True, data=False, threads=False)
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    settings = TokenizerSettings.parse(args.settings, "tokenizer")
    texts = tokenizer_corpus(World.load(Path(args.world)), task_files(args.tasks))
    save_tokenizer(train_tokenizer(texts, settings.vocab_size), Path(args.out))
