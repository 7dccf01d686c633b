"""`softeval verify`: check a run against a published record (bytes, verdicts, figure ranges)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from softeval.analysis import verify


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results")
    parser.add_argument("--published", default="config/published/default.yaml", help="the published record (YAML)")


def run(args: argparse.Namespace) -> None:
    record_path = Path(args.published)
    record = verify.read_record(record_path)
    rows = verify.verify(Path(args.results), record)
    print(verify.report(rows, record_path, record), end="")
    if not verify.passed(rows):  # exit 1: a check failed (2 is kept for bad input, as every command)
        print(
            f"softeval verify: {args.results} does not reproduce {record_path}: the rows marked **no** above "
            "(docs/reproducing.md says what must hold and why)",
            file=sys.stderr,
        )
        raise SystemExit(1)
