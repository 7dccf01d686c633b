"""`softeval zoo-report` (rule zoo_report): the zoo's ground-truth table, from its models' probes."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.jobs.arguments import add_settings
from softeval.settings import ZooReportSettings
from softeval.zoo.table import write_table, zoo_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_settings(parser, ZooReportSettings)
    parser.add_argument("--probes", required=True, help="folder holding <model>/<role>.json")
    parser.add_argument("--out-csv", required=True)
    parser.add_argument("--out-md", required=True)


def run(args: argparse.Namespace) -> None:
    settings = ZooReportSettings.parse(args.settings, "zoo-report")
    write_table(zoo_table(settings.models, Path(args.probes)), Path(args.out_csv), Path(args.out_md))
