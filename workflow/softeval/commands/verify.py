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
    replayed: dict[str, str] | None = None
    failure = ""
    if not args.replay:
        print("replay: skipped (--no-replay)")
    elif "replay" not in record:
        print(f"replay: {record_path} ships no outputs (publish-ranges --outputs): nothing to replay")
    else:
        archive = record_path.parent / record["replay"]["outputs"]
        try:
            replayed = replay.replay(archive, Path(args.checkout), cores=args.cores, configfile=record.get("config"))
        except replay.ReplayFailed as failed:
            failure = str(failed)
    rows = verify.verify(Path(args.results), record, replayed)
    if failure:
        rows.insert(0, verify.Row("replay", "the workflow on the published outputs", "completes", "failed", False))
        print(f"softeval verify: the replay did not complete; its log ends:\n{failure}", file=sys.stderr)
    print(verify.report(rows, record_path, record), end="")
    if not verify.passed(rows):  # exit 1: a check failed (2 is kept for bad input, as every command)
        print(
            f"softeval verify: {args.results} does not reproduce {record_path}: the rows marked **no** above "
            "(docs/reproducing.md says what must hold and why)",
            file=sys.stderr,
        )
        raise SystemExit(1)
