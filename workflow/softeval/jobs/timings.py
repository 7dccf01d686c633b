"""`softeval timings` (rule timings): seconds and memory per rule, and the critical path, from
the jobs' Snakemake benchmark files."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis.timings import write_timings
from softeval.jobs.arguments import json_object


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--patterns", type=json_object, required=True, help="JSON: {rule: benchmark path pattern}")
    parser.add_argument("--upstream", type=json_object, required=True, help="JSON: {rule: [its upstream rules]}")
    parser.add_argument("--benchmarks", nargs="*", default=[], help="the jobs' Snakemake benchmark files")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)


def run(args: argparse.Namespace) -> None:
    patterns = {str(k): str(v) for k, v in args.patterns.items()}
    upstream = {str(k): [str(r) for r in v] for k, v in args.upstream.items()}
    write_timings([Path(p) for p in args.benchmarks], patterns, upstream, Path(args.out_csv), Path(args.out_md))
