"""`softeval manifest`: write or check the sha256 manifest of a run (zoo, prompts, tables)."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.analysis import manifest
from softeval.schema import InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--results", default="results")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--write", metavar="FILE", help="list the run's files and their sha256 in FILE")
    which.add_argument("--check", metavar="FILE", help="compare the run with FILE (exit 2 on any difference)")


def run(args: argparse.Namespace) -> None:
    actual = manifest.build(Path(args.results))
    if args.write:
        manifest.write(actual, Path(args.write))
        print(f"{len(actual)} files listed in {args.write}")
        return
    comparison = manifest.compare(manifest.read(Path(args.check)), actual)
    print(comparison.summary())
    if not comparison.ok:
        raise InputError(
            f"{args.results} does not reproduce {args.check} (see above; `softeval review` and docs/reproducing.md "
            "say what can differ and why)"
        )
