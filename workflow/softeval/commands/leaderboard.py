"""`softeval leaderboard`: a finished run's leaderboard, or ranked again by another metric
(softeval.runner.leaderboard)."""

from __future__ import annotations

import argparse

from softeval.runner import leaderboard


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results", help="a run's results folder (default: results)")
    parser.add_argument("--metric", choices=["strict", "knowledge", "format"], help="rank again by this metric")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples of the intervals (with --metric)")
    parser.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> None:
    print(leaderboard(args.results, args.metric, args.bootstrap, args.seed)[1], end="")
