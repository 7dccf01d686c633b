"""`softeval export` (the export_lm_eval rule, and TensorBoard / W&B by hand): its arguments and
its run, beside each other; the work is softeval.analysis.export's. The arguments are defined
without importing pandas, so that building the command line stays light for every command."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--summary", required=True, help="results/tables/scores.parquet (or .csv)")
    parser.add_argument("--meta", nargs="*", default=[], help="results/data/<task>/meta.json (versions, split sizes)")
    parser.add_argument("--settings", type=json.loads, default=None,
                        help='JSON {"seed", "evaluation", "loaded"} (lm_eval_results: config)')  # fmt: skip
    parser.add_argument(
        "--final-step",
        type=int,
        help="the soft prompt's final step (default: evaluation.tune.steps, else the largest scored)",
    )
    parser.add_argument("--all-steps", action="store_true", help="lm-eval files: every soft-prompt snapshot too")
    parser.add_argument(
        "--date", type=float, help="UNIX time the lm-eval files record (default: none, so the files are reproducible)"
    )
    parser.add_argument("--lm-eval-dir", help="write results_<model>.json (and .post.json) here")
    parser.add_argument("--leaderboard", help="results/tables/leaderboard.csv (TensorBoard / W&B)")
    parser.add_argument("--softprompts", help="results/softprompts: the tuning curves (TensorBoard / W&B)")
    parser.add_argument("--tensorboard-dir", help="write TensorBoard event files here (replaced whole)")
    parser.add_argument("--wandb-dir", help="write a W&B run here")
    parser.add_argument("--wandb-project", default="softeval")
    parser.add_argument("--wandb-run-name", default="softeval")
    parser.add_argument("--wandb-mode", choices=["offline", "online", "disabled"], default="offline")


def run(args: argparse.Namespace) -> None:
    from softeval.analysis.aggregate import load_summary
    from softeval.analysis.export import (
        export_tensorboard,
        export_wandb,
        read_curves,
        read_leaderboard,
        read_task_meta,
        write_lm_eval_results,
    )
    from softeval.analysis.export.results_files import _setting

    if not (args.lm_eval_dir or args.tensorboard_dir or args.wandb_dir):
        raise InputError("softeval export: nothing to write; give --lm-eval-dir, --tensorboard-dir or --wandb-dir")
    if args.settings is not None and not isinstance(args.settings, dict):
        raise InputError("softeval export --settings: a JSON object, e.g. '{\"seed\": 0}'")
    summary_path = Path(args.summary)
    scores = load_summary(summary_path)
    final_step = args.final_step
    if final_step is None and args.settings is not None:
        final_step = _setting(args.settings, "evaluation.tune", "steps")  # the final snapshot is always scored
    if args.lm_eval_dir:
        date = args.date  # lm-eval writes when it ran; a reproducible file leaves the time out
        for path in write_lm_eval_results(
            scores,
            args.lm_eval_dir,
            task_meta=read_task_meta(args.meta),
            config=args.settings,
            final_step=final_step,
            all_steps=args.all_steps,
            date=date,
        ):
            print(path)
    leaderboard = read_leaderboard(args.leaderboard) if args.leaderboard else None
    curves = read_curves(args.softprompts) if args.softprompts else None
    if args.tensorboard_dir:
        print(export_tensorboard(scores, leaderboard, args.tensorboard_dir, curves=curves))
    if args.wandb_dir:
        folder = export_wandb(
            scores,
            leaderboard,
            args.wandb_dir,
            args.wandb_project,
            args.wandb_run_name,
            args.wandb_mode,
            curves=curves,
            config=args.settings,
        )
        print(folder)
