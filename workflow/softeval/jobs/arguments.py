"""What several jobs' command lines share: the JSON settings flag, the model, task, zoo-input
and analysis flag groups, and the reading of the task files and model options they
name. Light to import: the modules behind it (task files, the model engine) load when read."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from softeval.layout import LOGLIK, unit_root
from softeval.schema import InputError
from softeval.settings import AnalysisSettings, JobSettings


def json_object(text: str) -> dict[str, Any]:
    """A job's --settings: one JSON object, or argparse's one-line error (the rule passes it)."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}): {text[:80]!r}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object {{...}}, not {type(value).__name__}")
    return value


def add_settings(
    p: argparse.ArgumentParser,
    kind: type[JobSettings],
    flag: str = "--settings",
    default: str | None = None,
) -> None:
    """The job's settings: one JSON object, which the job parses into `kind` (its help lists the keys)."""
    keys = ", ".join(f.name for f in dataclasses.fields(kind) if f.name != "given")
    section = f"; config section {kind.SECTION}" if kind.SECTION else ""
    p.add_argument(flag, type=json_object, required=default is None, default=default, help=f"JSON {{{keys}}}{section}")


def add_model(p: argparse.ArgumentParser) -> None:
    """The model a job loads, how, and on what (tune, evaluate)."""
    group = p.add_argument_group("model")
    group.add_argument("--model", required=True, help="Hugging Face model directory or hub id")
    group.add_argument(
        "--model-options",
        type=json_object,
        default="{}",
        help='JSON: {"revision", "dtype", "device_map", "trust_remote_code", "chat_template"}',
    )
    group.add_argument("--gpus", type=int, default=0, help="GPUs the job holds (a GPU-slot lock pins them)")
    group.add_argument("--threads", type=int, default=1)


def add_task(p: argparse.ArgumentParser, data_help: str = "the task's folder of prepared splits") -> None:
    """One task: its file, and its prepared splits."""
    group = p.add_argument_group("task")
    group.add_argument("--task", required=True, help="the task file (config/tasks/<name>.yaml)")
    group.add_argument("--data", required=True, help=data_help)


def add_zoo_inputs(p: argparse.ArgumentParser, world: bool, data: bool, threads: bool = True) -> None:
    """What a zoo job builds from: the world tasks (and the world, their splits), with its threads."""
    group = p.add_argument_group("zoo inputs")
    group.add_argument("--tasks", nargs="+", required=True, help="the world tasks' files")
    if world:
        group.add_argument("--world", required=True)
    if data:
        group.add_argument("--data", required=True, help="folder holding <task>/train.jsonl and test.jsonl")
    if threads:
        group.add_argument("--threads", type=int, default=1)


def add_judge_gpus(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--gpus",
        type=int,
        default=0,
        help="GPUs the job holds (locked GPU slots): a judge that loads its model",
    )


def add_analysis(p: argparse.ArgumentParser, scores: bool) -> None:
    """What tables, figures and claims read: the aggregated scores (and per-example files)."""
    p.add_argument("--summary", required=True, help="results/tables/scores.parquet")
    add_settings(p, AnalysisSettings)
    if scores:
        p.add_argument("--scores-root", required=True, help="results/scores (per-example verdicts, for the bootstrap)")
        p.add_argument(
            "--loglik-root", default=unit_root(LOGLIK), help="option log-likelihoods (closed tasks' choices)"
        )


def task_files(paths: list[str]) -> list[Any]:
    """Tasks from their files' paths (what the workflow's rules pass: a task is its file)."""
    from softeval.data.tasks import load_task_file

    return [load_task_file(path) for path in paths]


def task_file(path: str) -> Any:
    """The one task of --task."""
    (task,) = task_files([path])
    return task


def data_dirs(data_root: str, tasks: list[Any]) -> dict[str, Path]:
    """Each task's folder of prepared splits under --data."""
    return {task.name: Path(data_root) / task.name for task in tasks}


def read_model_options(args: argparse.Namespace) -> Any:
    """--model-options as ModelOptions (an unknown option or value is one error line)."""
    from softeval.engine.models import ModelOptions

    try:
        return ModelOptions.from_dict(args.model_options)
    except (ValueError, TypeError) as err:
        raise InputError(f"--model-options: not a JSON object of model options ({err})") from None
