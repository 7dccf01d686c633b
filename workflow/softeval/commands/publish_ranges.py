"""`softeval publish-ranges`: a published record (what `softeval verify` checks) from several runs
of one config (seeds, machines)."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis import replay, verify
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", action="append", metavar="LABEL=RESULTS_DIR", help="one run (repeat)")
    parser.add_argument("--bytes-from", help="the run whose machine-independent files are published")
    parser.add_argument("--config", help="the config the runs used (recorded, not read)")
    parser.add_argument("--note", default="", help="how the runs were made (recorded)")
    parser.add_argument("--out", required=True)
    parser.add_argument(
        "--outputs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="pack the --bytes-from run's outputs beside the record (<out stem>-outputs.tar.gz) for verify's replay",
    )
    parser.add_argument(
        "--refresh-replay",
        action="store_true",
        help="only replay the --out record's outputs with this checkout and rewrite its replay digests "
        "(after a deliberate change to judging, tables or claims; review the diff)",
    )


def run(args: argparse.Namespace) -> None:
    if args.refresh_replay:
        refresh_replay(Path(args.out))
        return
    missing = [
        flag
        for flag, value in (("--run", args.run), ("--bytes-from", args.bytes_from), ("--config", args.config))
        if not value
    ]
    if missing:
        raise InputError(f"publish-ranges: give {', '.join(missing)} (or --refresh-replay with --out RECORD)")
    runs = labelled_runs(args.run)
    out = Path(args.out)
    outputs = None
    if args.outputs:
        archive = out.with_name(f"{out.stem}-outputs.tar.gz")
        replay.pack(Path(args.bytes_from), archive)
        outputs = archive.name
    record = verify.build_record(runs, Path(args.bytes_from), args.config, args.note, outputs)
    verify.write_record(record, out)
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


def refresh_replay(path: Path) -> None:
    """The record's replay digests recomputed by this checkout from its shipped outputs."""
    record = verify.read_record(path)
    if "replay" not in record:
        raise InputError(f"{path}: no replay section to refresh; publish it with --outputs")
    record["replay"]["sha256"] = replay.replay(path.parent / record["replay"]["outputs"], Path("."))
    verify.write_record(record, path)
    print(f"{len(record['replay']['sha256'])} replay digests rewritten: {path}")
