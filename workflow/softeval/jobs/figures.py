"""`softeval figures` (rule figures): figures of the paper's claims (PNG + PDF)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from softeval.analysis import figures
from softeval.analysis.aggregate import load_summary
from softeval.jobs.arguments import add_analysis
from softeval.settings import AnalysisSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_analysis(parser, scores=False)
    parser.add_argument("--swap", required=True, help="results/tables/swap_distance.csv")
    parser.add_argument("--gap", required=True, help="results/tables/score_gap.csv")
    parser.add_argument("--out-dir", required=True)


def run(args: argparse.Namespace) -> None:
    run_figures(
        summary_path=Path(args.summary),
        swap_csv=Path(args.swap),
        gap_csv=Path(args.gap),
        settings=AnalysisSettings.parse(args.settings, "figures"),
        out_dir=Path(args.out_dir),
    )


def run_figures(
    *, summary_path: Path, swap_csv: Path, gap_csv: Path, settings: AnalysisSettings, out_dir: Path
) -> None:
    summary = load_summary(summary_path)
    figures.tuning_curve(summary, set(settings.closed_tasks), out_dir / "tuning_curve")
    figures.method_scores(summary, settings.final_step, out_dir / "method_scores")
    figures.swap_distances(pd.read_csv(swap_csv), out_dir / "swap_distance")
    figures.score_gaps(pd.read_csv(gap_csv), out_dir / "score_gap")
