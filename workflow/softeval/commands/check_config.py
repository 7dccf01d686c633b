"""`softeval check-config`: every check the workflow makes of a config and its task files, before any job."""

from __future__ import annotations

import argparse
from pathlib import Path

from softeval.config import load_config_file
from softeval.preflight import preflight


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("configfile")
    parser.add_argument("--workflow-root", default=".", help="folder that task_dir is relative to")


def run(args: argparse.Namespace) -> None:
    preflight(load_config_file(args.configfile), str(args.configfile), Path(args.workflow_root))
    print(f"{args.configfile}: valid")
