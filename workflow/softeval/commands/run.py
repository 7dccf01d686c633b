"""`softeval run`: rank base checkpoints (softeval.runner: the workflow in a folder of its own),
then print the leaderboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.names import METHODS
from softeval.runner import LEADERBOARD, model_entry
from softeval.runner import run as run_workflow


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models", nargs="+", default=[], metavar="PATH_OR_HUB_ID", help=model_entry.__doc__)
    parser.add_argument("--tasks", nargs="+", default=[], help="task names (config/tasks), comma- or space-separated")
    parser.add_argument("--methods", nargs="+", help=f"of {', '.join(METHODS)} (default: all three)")
    parser.add_argument("--limit", type=int, help="evaluate a seeded sample of N test examples per task")
    parser.add_argument("--out", default="softeval-results", help="the run's folder (its results/ and config.yaml)")
    parser.add_argument("--cores", default="all", help="cores Snakemake may use (default: all)")
    parser.add_argument("--profile", help="a Snakemake profile: default, multigpu, slurm, or a folder")
    parser.add_argument("--mirror", help="a local folder of the benchmarks' files (offline), as tests/fixtures")
    parser.add_argument("--task-dir", help="a folder of your own task files (default: the shipped config/tasks)")
    parser.add_argument("--metric", choices=["strict", "knowledge", "format"], help="what the leaderboard ranks by")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="any config key, e.g. --set evaluation.tune.steps=40 (repeatable)")  # fmt: skip
    parser.add_argument("--configfile", help="a config file the flags are laid over")
    parser.add_argument("--show", choices=["progress", "all", "none"], default="progress",
                        help="progress: a status line with an ETA; all: Snakemake's own output")  # fmt: skip
    parser.add_argument(
        "--tensorboard", metavar="DIR", help="also write TensorBoard event files there (softeval[tracking])"
    )
    parser.add_argument("--wandb", metavar="PROJECT", help="also log a W&B run, offline unless WANDB_MODE=online")
    parser.add_argument("snakemake_args", nargs="*", help="after --: passed to snakemake as they are (e.g. -n)")


def run(args: argparse.Namespace) -> None:
    board = run_workflow(
        args.models,
        args.tasks,
        methods=args.methods,
        limit=args.limit,
        out=args.out,
        cores=args.cores,
        profile=args.profile,
        mirror=args.mirror,
        task_dir=args.task_dir,
        metric=args.metric,
        settings=args.settings,
        configfile=args.configfile,
        snakemake_args=args.snakemake_args,
        show=args.show,
        tensorboard=args.tensorboard,
        wandb_project=args.wandb,
    )
    if board is None:  # a dry run
        return
    markdown = Path(args.out).resolve() / LEADERBOARD.with_suffix(".md")
    print(markdown.read_text(encoding="utf-8") if markdown.is_file() else board.to_string(index=False))
    print(f"\nevery number's evidence: {Path(args.out).resolve() / 'results'} (results/README.md in the docs)")
