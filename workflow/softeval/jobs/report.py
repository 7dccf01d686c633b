"""What the report jobs read (softeval.jobs.tables and softeval.jobs.claims, rules of
rules/report.smk): every unit's per-example scores and, for closed tasks, its options chosen by
likelihood."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from softeval.analysis.evidence import items_of
from softeval.analysis.tables import models_in
from softeval.io import read_jsonl
from softeval.layout import UnitKey, unit_path
from softeval.names import BASE
from softeval.schema import InputError


def per_example_reader(scores_root: Path, summary: pd.DataFrame, metric: str):
    """Per-example verdicts of every model in one unit, for bootstrap resampling (the models
    scored in that role: a model without a post-trained twin has no post units)."""
    models = {role: models_in(summary, role) for role in set(summary["role"])}

    def read(role: str, task: str, method: str, step: int | None) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        ids: list[str] | None = None
        for model in models.get(role, []):
            path = unit_path(scores_root, model, role, task, method, step)
            rows = read_jsonl(path, "scores")
            if ids is not None and [row["id"] for row in rows] != ids:
                raise InputError(f"{path}: other test examples than {next(iter(out))}'s; delete it to recompute")
            ids = [row["id"] for row in rows]
            out[model] = np.array([float(row[metric]) for row in rows])
        return out

    return read


def base_score_reader(scores_root: Path):
    """Per-example score rows of one base-model unit."""

    def read(model: str, task: str, method: str, step: int | None) -> list[dict]:
        return read_jsonl(unit_path(scores_root, model, BASE, task, method, step), "scores")

    return read


def base_choice_reader(loglik_root: Path):
    """The option each test example of a base-model unit chose by likelihood (what closed-task
    knowledge scores), with the number of options per question."""

    def read(model: str, task: str, method: str, step: int | None) -> tuple[list[int], int]:
        path = unit_path(loglik_root, model, BASE, task, method, step)
        rows = read_jsonl(path, "option log-likelihoods")
        try:
            return [int(row["chosen"]) for row in rows], max(len(row["options"]) for row in rows)
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: rows without 'chosen' or 'options'; delete it to recompute") from None

    return read


def first_unit(summary: pd.DataFrame, task: str) -> UnitKey:
    """The task's first unit in the summary: any unit of a task has its test items and kind."""
    first = summary[summary["task"] == task].iloc[0]
    step = None if pd.isna(first["step"]) else int(first["step"])
    return UnitKey(first["model"], first["role"], task, first["method"], step)


class UnitReader:
    """Per-example metric values of any unit, read once; every unit of a task must score the
    same test examples in the same order (the comparisons are paired)."""

    def __init__(self, scores_root: Path) -> None:
        self.scores_root = scores_root
        self.rows: dict[UnitKey, list[dict]] = {}
        self.ids: dict[str, tuple[list[str], Path]] = {}

    def unit(self, unit: UnitKey) -> list[dict]:
        if unit not in self.rows:
            task = unit.task
            path = unit_path(self.scores_root, unit.model, unit.role, task, unit.method, unit.step)
            rows = read_jsonl(path, "scores")
            ids = [row["id"] for row in rows]
            seen = self.ids.setdefault(task, (ids, path))
            if ids != seen[0]:
                raise InputError(
                    f"{path}: other test examples than {seen[1]}; delete the older file and rerun to recompute it"
                )
            self.rows[unit] = rows
        return self.rows[unit]

    def __call__(self, unit: UnitKey, metric: str) -> np.ndarray:
        return np.array([float(row[metric]) for row in self.unit(unit)])

    def items(self, summary: pd.DataFrame) -> dict[str, list[str]]:
        """Per task, the item each test example asks about (the world's country, else the example
        itself): tasks asking about the same countries are then resampled by one draw of them
        (evidence.declare_items)."""
        items = {}
        for task in sorted(set(summary["task"])):
            items[task] = items_of(self.unit(first_unit(summary, task)))
        return items
