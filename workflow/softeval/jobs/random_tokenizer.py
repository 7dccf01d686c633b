"""`softeval random-tokenizer` (rule random_tokenizer): a Llama-style BPE tokenizer of real
vocabulary size, trained on prepared splits, for random models."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.zoo.random_model import task_texts, train_llama_style_tokenizer
from softeval.zoo.tokenizer import save_tokenizer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", nargs="+", required=True, help="prepared split files (their text trains it)")
    parser.add_argument("--vocab-size", type=int, required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    tokenizer = train_llama_style_tokenizer(task_texts(Path(p) for p in args.data), args.vocab_size, args.seed)
    save_tokenizer(tokenizer, Path(args.out))
