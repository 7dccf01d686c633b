"""`softeval verify`: check a run against a published record (bytes, the analysis replayed on the
record's outputs, figure ranges, contrasts; verdicts beside them)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from softeval.analysis import replay, verify


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results")
    parser.add_argument("--published", default="config/published/default.yaml", help="the published record (YAML)")
    parser.add_argument(
        "--replay",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="rerun judging, aggregation, tables, claims and calibration on the record's outputs (about a minute)",
    )
    parser.add_argument("--checkout", default=".", help="the workflow checkout a replay copies (its Snakefile)")
    parser.add_argument("--cores", type=int, default=2, help="cores for the replay")


def run(args: argparse.Namespace) -> None:
    record_path = Path(args.published)
    record = verify.read_record(record_path)
    replayed = None
    if args.replay and "replay" in record:
        archive = record_path.parent / record["replay"]["outputs"]
        replayed = replay.replay(archive, Path(args.checkout), cores=args.cores)
    rows = verify.verify(Path(args.results), record, replayed)
    print(verify.report(rows, record_path, record), end="")
    if not verify.passed(rows):  # exit 1: a check failed (2 is kept for bad input, as every command)
        print(
            f"softeval verify: {args.results} does not reproduce {record_path}: the rows marked **no** above "
            "(docs/reproducing.md says what must hold and why)",
            file=sys.stderr,
        )
        raise SystemExit(1)
