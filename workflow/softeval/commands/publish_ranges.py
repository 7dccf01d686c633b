"""`softeval publish-ranges`: a published record (what `softeval verify` checks) from several runs
of one config (seeds, machines)."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis import verify
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", action="append", required=True, metavar="LABEL=RESULTS_DIR", help="one run (repeat)")
    parser.add_argument("--bytes-from", required=True, help="the run whose machine-independent files are published")
    parser.add_argument("--config", required=True, help="the config the runs used (recorded, not read)")
    parser.add_argument("--note", default="", help="how the runs were made (recorded)")
    parser.add_argument("--out", required=True)


def run(args: argparse.Namespace) -> None:
    runs = labelled_runs(args.run)
    record = verify.build_record(runs, Path(args.bytes_from), args.config, args.note)
    verify.write_record(record, Path(args.out))
    print(f"{len(record['figures'])} figures from {len(runs)} runs, {len(record['bytes'])} byte files: {args.out}")


def labelled_runs(items: list[str]) -> dict[str, Path]:
    """--run LABEL=RESULTS_DIR, each: {label: results folder}."""
    runs: dict[str, Path] = {}
    for item in items:
        label, sep, path = item.partition("=")
        if not sep or not label or not path:
            raise InputError(f"--run {item!r}: write it as LABEL=RESULTS_DIR (e.g. 'seed 0=/tmp/s0/results')")
        runs[label] = Path(path)
    return runs
