"""`softeval probe` (rule probe_zoo_model): cloze knowledge and zero-shot format probes of zoo
models, one after another."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.jobs.arguments import add_settings, add_zoo_inputs, data_dirs, task_files
from softeval.schema import InputError
from softeval.settings import ProbeSettings
from softeval.zoo.probe import probe_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, ProbeSettings)
    add_zoo_inputs(parser, world=True, data=True)
    parser.add_argument("--model", nargs="+", required=True, help="one or more model folders")
    parser.add_argument("--out-json", nargs="+", required=True, help="a summary per model")
    parser.add_argument("--out-examples", nargs="+", required=True, help="every probe question per model")


def run(args: argparse.Namespace) -> None:
    if not (len(args.model) == len(args.out_json) == len(args.out_examples)):
        raise InputError("probe: give as many --out-json and --out-examples files as --model folders, in order")
    settings = ProbeSettings.parse(args.settings, "probe")
    tasks = task_files(args.tasks)
    folders = data_dirs(args.data, tasks)
    for model, out_json, out_examples in zip(args.model, args.out_json, args.out_examples, strict=True):
        probe_model(
            model_dir=Path(model),
            world_path=Path(args.world),
            tasks=tasks,
            data_dirs=folders,
            max_new_tokens=settings.max_new_tokens,
            batch_size=settings.batch_size,
            threads=args.threads,
            out_json=Path(out_json),
            knowledge=settings.knowledge,
            out_examples=Path(out_examples),
        )
