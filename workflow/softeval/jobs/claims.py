"""`softeval claims` (rule claims): each of the paper's claims checked on this run, as
claims.{md,csv,tex}."""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from softeval.analysis.aggregate import load_summary, pilot_note
from softeval.analysis.claims.framework import Inputs, check_claims
from softeval.analysis.claims.writer import write_claims
from softeval.analysis.tables import read_swap_draws
from softeval.analysis.verify import read_record
from softeval.jobs.arguments import add_analysis
from softeval.jobs.report import UnitReader, base_choice_reader
from softeval.settings import AnalysisSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_claim_inputs(parser)
    parser.add_argument("--out", required=True, help="output stem: writes <out>.csv, .md, .tex")
    parser.add_argument("--published", help="a published record: its runs' verdicts are quoted in claims.md")


def run(args: argparse.Namespace) -> None:
    run_claims(
        summary_path=Path(args.summary),
        swap_csv=Path(args.swap),
        swap_draws=Path(args.swap_draws),
        scores_root=Path(args.scores_root),
        loglik_root=Path(args.loglik_root),
        settings=AnalysisSettings.parse(args.settings, "claims"),
        out_stem=Path(args.out),
        published=Path(args.published) if args.published else None,
    )


def run_claims(
    *,
    summary_path: Path,
    swap_csv: Path,
    swap_draws: Path,
    scores_root: Path,
    loglik_root: Path,
    settings: AnalysisSettings,
    out_stem: Path,
    published: Path | None = None,
) -> None:
    """claims.{md,csv,tex}; the zoo's ground truth comes in through the swap table's truth_distance;
    a published record's verdict stability is quoted under each claim."""
    inputs = claim_inputs(summary_path, swap_csv, swap_draws, scores_root, loglik_root, settings)
    stability = None
    if published is not None:
        record = read_record(published)
        stability = (published.as_posix(), {int(claim): runs for claim, runs in record["verdicts"].items()})
    write_claims(check_claims(inputs), out_stem, pilot_note(inputs.summary), inputs.swap, stability)


def add_claim_inputs(parser: argparse.ArgumentParser) -> None:
    """The flags of what the claims read (claim_inputs), shared with `softeval calibration`."""
    add_analysis(parser, scores=True)
    parser.add_argument("--swap", required=True, help="results/tables/swap_distance.csv")
    parser.add_argument(
        "--swap-draws", required=True, help="results/tables/swap_distance_draws.parquet (the tables job's bootstrap)"
    )


def claim_inputs(
    summary_path: Path,
    swap_csv: Path,
    swap_draws: Path,
    scores_root: Path,
    loglik_root: Path,
    settings: AnalysisSettings,
) -> Inputs:
    """What the claims read of a run (`softeval calibration` re-checks them on controls of the same)."""
    summary = load_summary(summary_path)
    reader = UnitReader(scores_root)
    return Inputs(
        summary=summary,
        swap=pd.read_csv(swap_csv),
        read=reader,
        closed_tasks=set(settings.closed_tasks),  # the Plan's, not rediscovered from score rows
        items=reader.items(summary),
        settings=settings,
        choices=base_choice_reader(loglik_root),
        swap_draws=read_swap_draws(swap_draws, settings.bootstrap),  # the tables job's: the bootstrap runs once
    )
