"""`softeval claims-explain`: a claim's estimates recomputed from the score files with pandas
alone (softeval.analysis.explain), beside the claims table's."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis import explain
from softeval.names import METHODS
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "claim", type=int, help="the claim's number (every claim; claim 1's saturation order is a step, not recomputed)"
    )
    parser.add_argument("--results", default="results")
    parser.add_argument("--claims", help="the claims table to compare with (default: <results>/tables/claims.csv)")
    parser.add_argument("--metric", default="strict", choices=["strict", "knowledge", "format"])
    parser.add_argument(
        "--reference-method",
        choices=list(METHODS),
        help="claims 3-4: the post-trained ranking's method (analysis.reference_method; default as the config's)",
    )


def run(args: argparse.Namespace) -> None:
    results = Path(args.results)
    claims_csv = Path(args.claims) if args.claims else results / "tables" / "claims.csv"
    if not claims_csv.is_file():
        raise InputError(f"{claims_csv}: claims table not found; run `softeval claims` (or the workflow) first")
    table = explain.compare(results, args.claim, claims_csv, metric=args.metric, reference=args.reference_method)
    if table.empty:
        raise InputError(f"claims-explain: claim {args.claim} has no part recomputed here (is it a claim of this run?)")
    print(f"claim {args.claim}, recomputed by {explain.__file__} (json, pathlib, numpy, pandas only):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:+.6f}"))
    if not table["match"].all():
        raise InputError(f"claims-explain: {int((~table['match']).sum())} part(s) differ from {claims_csv}")
