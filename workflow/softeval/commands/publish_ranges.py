"""`softeval publish-ranges`: a published record (what `softeval verify` checks) from several runs
of one config (seeds, machines)."""

from __future__ import annotations

import argparse
import tempfile
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
        help="only replay the --out record's outputs with this checkout and rewrite its replay digests, and "
        "the shipped run's verdicts and calibration (after a deliberate change to judging, tables or claims; "
        "review the diff)",
    )
    parser.add_argument(
        "--shipped-run",
        metavar="LABEL",
        help="with --refresh-replay: the run whose outputs the record ships, where the record does not say",
    )
    parser.add_argument(
        "--drop-other-verdicts",
        metavar="CLAIMS",
        type=claim_numbers,
        default=(),
        help="with --refresh-replay: for these claims (comma-separated numbers) keep only the shipped run's "
        "verdicts and calibration rows (after a change to those claims' checks the other runs' were computed "
        "by the old checks, and without their outputs they cannot be recomputed; remake the record from new "
        "runs to have them again)",
    )


def run(args: argparse.Namespace) -> None:
    if args.refresh_replay:
        refresh_replay(Path(args.out), args.shipped_run, args.drop_other_verdicts, args.note)
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


def claim_numbers(text: str) -> tuple[int, ...]:
    """'3,5' -> (3, 5)."""
    try:
        return tuple(int(item) for item in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: claim numbers separated by commas, e.g. 3,5") from None


def refresh_replay(
    path: Path, shipped_run: str | None = None, drop_others: tuple[int, ...] = (), note: str = ""
) -> None:
    """The record's replay digests recomputed by this checkout from its shipped outputs, and the
    shipped run's verdicts and calibration with them: they are computed from those outputs too, so
    they are that run's under this checkout's checks. The other runs' are not (their outputs are
    not shipped): for the claims in `drop_others`, whose checks changed, they are removed."""
    record = verify.read_record(path)
    if "replay" not in record:
        raise InputError(f"{path}: no replay section to refresh; publish it with --outputs")
    run = shipped_run or record["replay"].get("run")
    if run not in record["runs"]:
        raise InputError(
            f"{path}: replay.run {run!r} is not one of the record's runs ({', '.join(record['runs'])}); "
            "give --shipped-run LABEL, the run whose outputs it ships"
        )
    with tempfile.TemporaryDirectory(prefix="softeval-refresh-") as scratch:
        work = Path(scratch)
        record["replay"]["sha256"] = replay.replay(path.parent / record["replay"]["outputs"], Path("."), workdir=work)
        tables = work / "results" / "tables"
        verdicts = verify.run_verdicts(tables)
        calibration = verify.calibration_over_runs({run: tables / "calibration.csv"})
    record["replay"]["run"] = run
    record["verdicts"] = {
        claim: ({} if claim in drop_others else record["verdicts"].get(claim, {})) | {run: verdict}
        for claim, verdict in verdicts.items()
    }
    if "calibration" in record:
        old = record["calibration"]
        record["calibration"] = {
            key: {
                "expected": entry["expected"],
                "runs": ({} if int(key.split("/")[1]) in drop_others else old.get(key, {}).get("runs", {}))
                | entry["runs"],
            }
            for key, entry in calibration.items()
        }
    if note:
        record["note"] = note
    verify.write_record(record, path)
    dropped = f"; the other runs' dropped for claims {', '.join(map(str, drop_others))}" if drop_others else ""
    print(f"{len(record['replay']['sha256'])} replay digests and {run}'s verdicts rewritten{dropped}: {path}")
