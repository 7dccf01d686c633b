"""`softeval aggregate` (rule aggregate): one row per model, role, task, method and step, with
bootstrap intervals over the test examples."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis.aggregate import aggregate_scores, write_summary
from softeval.io import read_json
from softeval.jobs.arguments import add_settings
from softeval.settings import AggregateSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, AggregateSettings)
    parser.add_argument("--scores-root", required=True, help="results/scores")
    parser.add_argument("--scores", nargs="+", required=True)
    parser.add_argument("--meta", nargs="*", default=[], help="results/data/<task>/meta.json (test split sizes)")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-parquet", required=True)


def run(args: argparse.Namespace) -> None:
    settings = AggregateSettings.parse(args.settings, "aggregate")
    table = aggregate_scores(
        Path(args.scores_root),
        [Path(p) for p in args.scores],
        settings.bootstrap,
        settings.seed,
        full_test_sizes([Path(p) for p in args.meta]),
    )
    write_summary(table, Path(args.out_csv), Path(args.out_parquet))


def full_test_sizes(metas: list[Path]) -> dict[str, int]:
    """Each task's full test split size, from its prepared data's meta.json (a pilot run scores a
    sample of it)."""
    totals = {}
    for path in metas:
        meta = read_json(path)
        totals[meta["task"]] = meta.get("test_total", meta["counts"]["test"])
    return totals
