"""`softeval review`: a run's evaluated units, or the examples behind one (model, task, method),
or the examples that flip against another method or step."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis.review import FILTERS, list_units, show_flips, show_unit
from softeval.names import BASE, METHODS, ROLES
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results")
    parser.add_argument("--model")
    parser.add_argument("--role", default=BASE, choices=list(ROLES))
    parser.add_argument("--task")
    # no argparse choices: an unknown method is one error line listing the methods the run evaluated
    parser.add_argument("--method", help=f"one of {', '.join(METHODS)}")
    parser.add_argument("--step", type=int, help="soft_prompt: the tuning step (default: the final evaluated step)")
    parser.add_argument("--vs", metavar="METHOD", help="list the examples that flip against this method's unit")
    parser.add_argument("--vs-step", type=int, help="the step of the --vs unit (soft_prompt; default: the final step)")
    parser.add_argument(
        "--metric", choices=["knowledge", "format", "strict"], help="metric of the flips (default strict)"
    )
    parser.add_argument("--tasks", help="folder of task files, for the format rule (default: config/tasks)")
    parser.add_argument("--limit", type=int, default=20, help="examples to print (with --vs: per direction)")
    for name in ("wrong-format", "wrong-knowledge", "right-knowledge-wrong-format", "not-strict"):
        parser.add_argument(f"--{name}", action="store_true", help=f"only examples that are {name.replace('-', ' ')}")


def run(args: argparse.Namespace) -> None:
    results = Path(args.results)
    tasks = Path(args.tasks) if args.tasks else None
    chosen = [name for name in FILTERS if getattr(args, name.replace("-", "_"), False)]
    which = chosen[0] if chosen else "all"
    compare = args.vs is not None or args.vs_step is not None
    if len(chosen) > 1 or (chosen and compare):
        raise InputError(f"review: one filter at a time, and none with --vs/--vs-step (given: {', '.join(chosen)})")
    if args.metric is not None and not compare:
        raise InputError("--metric is the metric of --vs/--vs-step flips; add --vs METHOD or --vs-step N")
    if args.model and args.task and args.method:
        unit = (results, args.model, args.role, args.task, args.method, args.step)
        if compare:
            print(show_flips(*unit, args.vs, args.vs_step, args.metric or "strict", args.limit, tasks))
        else:
            print(show_unit(*unit, which, args.limit, tasks))
        return
    if compare or chosen:
        raise InputError("--vs, --vs-step and the example filters show one unit: pass --model, --task and --method")
    units = list_units(results, model=args.model, role=args.role, task=args.task, method=args.method, step=args.step)
    print(units.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
