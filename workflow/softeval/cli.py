"""`softeval` command line: one subcommand per workflow step, usable without Snakemake.

Rules pass paths as flags and a job's settings as one JSON object (--settings; typed in
softeval.settings), so a rule's shell line shows exactly what made an artifact.

Each subcommand is a module with `add_arguments(parser)` and `run(args)`: a workflow job's in
softeval.jobs, a user's command in softeval.commands. This file only dispatches: a subcommand's
module is imported when that subcommand is parsed or its help shown, so building the parser
imports no pandas or torch and a job imports its own module alone.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

from softeval.schema import InputError

# name: (module under softeval, help), in the order `softeval --help` lists them; a dict in place
# of a module holds the subcommands of the name (`softeval judge run`)
Table = dict[str, tuple["str | Table", str]]
COMMANDS: Table = {
    "run": ("commands.run", "rank base checkpoints: the workflow in a folder of its own, then the leaderboard"),
    "leaderboard": ("commands.leaderboard", "a run's leaderboard; --metric ranks it again by another metric"),
    "check-config": ("commands.check_config", "validate a config file and its task files"),
    "plan-cost": ("commands.plan_cost", "GPU-hours of a config's jobs (HF and vLLM backends), before running"),
    "world": ("jobs.world", "generate the synthetic world"),
    "prepare": ("jobs.prepare", "write a task's train/test/few_shot splits"),
    "convert-gguf": ("jobs.convert_gguf", "convert a GGUF checkpoint to a float32 Hugging Face directory"),
    "random-tokenizer": ("jobs.random_tokenizer", "a Llama-style BPE tokenizer of real vocabulary size"),
    "random-model": ("jobs.random_model", "a randomly initialised Llama-style model (smoke runs)"),
    "mirror": ("commands.mirror", "download real tasks' splits into a local mirror (needs internet)"),
    "tokenizer": ("jobs.tokenizer", "train the zoo tokenizer on the world's text"),
    "pretrain": ("jobs.pretrain", "pre-train one zoo base model"),
    "posttrain": ("jobs.posttrain", "post-train (SFT) a base model into its twin"),
    "probe": ("jobs.probe", "cloze knowledge and zero-shot format probes of zoo models, one after another"),
    "tune": ("jobs.tune", "train a soft prompt per task for one model, loading it once"),
    "evaluate": ("jobs.evaluate", "every output of one model on one task: responses and option log-likelihoods"),
    "judge": (
        {
            "run": ("jobs.judge", "per-example verdicts for a unit's generations"),
            "validate": ("jobs.judge_validate", "accuracy and Cohen's kappa of a judge on hand-labelled examples"),
        },
        "judge generations (run) or check a judge (validate)",
    ),
    "export": ("jobs.export", "lm-eval results files per model; TensorBoard / W&B (optional)"),
    "aggregate": ("jobs.aggregate", "one row per model, role, task, method and step"),
    "tables": ("jobs.tables", "swap distance, score gap and knowledge/format tables (CSV, Markdown, LaTeX)"),
    "figures": ("jobs.figures", "figures of the paper's claims (PNG + PDF)"),
    "claims": ("jobs.claims", "check the paper's claims on this run"),
    "calibration": ("jobs.calibration", "the claims on controls of this run where each should hold and should fail"),
    "claims-explain": ("commands.claims_explain", "recompute a claim's estimates from the score files with pandas"),
    "timings": ("jobs.timings", "seconds and memory per rule, and the critical path, from benchmark files"),
    "manifest": ("commands.manifest", "write or check the sha256 manifest of a run (zoo, prompts, tables)"),
    "verify": ("commands.verify", "check a run against a published record: bytes, verdicts, figure ranges"),
    "publish-ranges": ("commands.publish_ranges", "write a published record from several runs (seeds, machines)"),
    "review": ("commands.review", "list evaluated units, or show the examples behind one (model, task, method)"),
    "zoo-report": ("jobs.zoo_report", "ground-truth table of the zoo"),
}


class Command(argparse.ArgumentParser):
    """A subcommand's parser: its module adds the arguments (and gives `func`, its run) the first
    time the subcommand is parsed or its help shown."""

    def __init__(self, *args: Any, module: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.module = module

    def load(self) -> None:
        if self.module is not None:
            module, self.module = importlib.import_module(f"softeval.{self.module}"), None
            module.add_arguments(self)
            self.set_defaults(func=module.run)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self.load()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self.load()
        return super().format_usage()

    def format_help(self) -> str:
        self.load()
        return super().format_help()


def add_commands(parser: argparse.ArgumentParser, table: Table, dest: str) -> None:
    sub = parser.add_subparsers(dest=dest, required=True, parser_class=Command)
    for name, (target, help) in table.items():
        if isinstance(target, dict):
            add_commands(sub.add_parser(name, help=help), target, f"{name}_command")
        else:
            sub.add_parser(name, help=help, module=target)


def build_parser() -> argparse.ArgumentParser:
    """Every subcommand of COMMANDS; a subcommand's own arguments come from its module, when used."""
    parser = argparse.ArgumentParser(prog="softeval", description=__doc__.splitlines()[0])
    add_commands(parser, COMMANDS, "command")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "gpus", 0):
            from softeval.engine.gpu_slots import acquire

            acquire(args.gpus)  # before anything touches CUDA
        args.func(args)
    except InputError as err:
        print(f"softeval: error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
