"""Reading the leaderboard's units: the score rows of (model, role, task, method, step), read once
and checked to score the same test examples in the same order (the comparisons are paired); which
base models and tasks a scores folder holds, and which method a task is ranked by."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from softeval.io import read_jsonl
from softeval.layout import unit_path
from softeval.names import BASE, FEW_SHOT, SOFT_PROMPT, ZERO_SHOT
from softeval.schema import InputError

METRICS = ("knowledge", "format", "strict")
FALLBACKS = (FEW_SHOT, ZERO_SHOT)


class _Units:
    """Score rows of units, read once; every unit of a task must score the same test examples in
    the same order (the comparisons are paired)."""

    def __init__(self, scores_root: Path) -> None:
        self.root = scores_root
        self.rows: dict[tuple, list[dict]] = {}
        self.ids: dict[str, tuple[list, Path]] = {}

    def path(self, model: str, role: str, task: str, method: str, step: int | None) -> Path:
        return unit_path(self.root, model, role, task, method, _step(method, step))

    def exists(self, model: str, role: str, task: str, method: str, step: int | None) -> bool:
        return self.path(model, role, task, method, step).is_file()

    def __call__(self, model: str, role: str, task: str, method: str, step: int | None) -> list[dict]:
        key = (model, role, task, method, _step(method, step))
        if key not in self.rows:
            path = self.path(*key)
            rows = read_jsonl(path, "scores")
            if not rows:
                raise InputError(f"{path}: no score rows; delete it so the workflow recomputes it")
            missing = [k for k in ("id", *METRICS) if k not in rows[0]]
            if missing:
                raise InputError(f"{path}: score rows without {missing[0]!r}; delete it so the workflow recomputes it")
            ids = [row.get("id") for row in rows]
            seen = self.ids.setdefault(task, (ids, path))
            if ids != seen[0]:
                raise InputError(
                    f"{path}: other test examples than {seen[1]}; delete the older file and rerun to recompute it"
                )
            self.rows[key] = rows
        return self.rows[key]

    def values(self, model: str, role: str, task: str, method: str, step: int | None, metric: str) -> np.ndarray:
        return np.array([float(row[metric]) for row in self(model, role, task, method, step)])


def _step(method: str, step: int | None) -> int | None:
    return step if method == SOFT_PROMPT else None


def method_label(method: str, step: int | None) -> str:
    return f"{method} step {step}" if method == SOFT_PROMPT else method


def base_models(scores_root: Path) -> list[str]:
    """Every model with scores of its base role."""
    return sorted(p.parent.name for p in Path(scores_root).glob("*/base") if p.is_dir())


def tasks_of(scores_root: Path, models: Sequence[str]) -> list[str]:
    """Every task any of the models' base role was scored on."""
    return sorted({p.name for m in models for p in (Path(scores_root) / m / BASE).glob("*") if p.is_dir()})


def choose_method(units: _Units, models: Sequence[str], task: str, preferred: Sequence[str], final_step: int) -> str:
    """The first of `preferred` evaluated for every model's base role on `task`."""
    for method in preferred:
        if all(units.exists(m, BASE, task, method, final_step) for m in models):
            return method
    wanted = [str(units.path(m, BASE, task, preferred[0], final_step)) for m in models]
    missing = [p for p in wanted if not Path(p).is_file()]
    raise InputError(
        f"task {task}: no method of {', '.join(preferred)} was scored for every base model "
        f"(missing, e.g. {missing[0]}); run the workflow for these models, or leave the task out"
    )
