"""`softeval calibration` (rule calibration): the claims re-checked on controls of this run, where
each should hold and where each should fail, as calibration.{md,csv}."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis.calibration import calibrate, write_calibration
from softeval.analysis.verify import read_record
from softeval.jobs.claims import add_claim_inputs, claim_inputs
from softeval.jobs.report import UnitReader
from softeval.settings import AnalysisSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_claim_inputs(parser)
    parser.add_argument("--out", required=True, help="output stem: writes <out>.csv and <out>.md")
    parser.add_argument("--published", help="a published record: how often its runs met each expectation")


def run(args: argparse.Namespace) -> None:
    scores_root = Path(args.scores_root)
    inputs = claim_inputs(
        Path(args.summary),
        Path(args.swap),
        Path(args.swap_draws),
        scores_root,
        Path(args.loglik_root),
        AnalysisSettings.parse(args.settings, "calibration"),
    )
    reader = inputs.read
    assert isinstance(reader, UnitReader)
    published = None
    if args.published:
        record = read_record(Path(args.published))
        published = (Path(args.published).as_posix(), record.get("calibration", {}))
    write_calibration(calibrate(inputs, reader.unit), Path(args.out), published)
