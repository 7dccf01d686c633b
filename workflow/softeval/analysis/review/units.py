"""Which units a run evaluated and what one of them holds: the rows of the tidy table, a unit
named on the command line checked against the files present (`resolve_unit`), and its score rows
joined with its generations and option log-likelihoods (`load_unit`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.aggregate import KEYS, load_summary
from softeval.io import check_slug, read_jsonl
from softeval.layout import GENERATIONS, LOGLIK, SCORES, unit_folder, unit_path
from softeval.names import SOFT_PROMPT
from softeval.schema import InputError

FILTERS = {
    "all": lambda r: True,
    "wrong-format": lambda r: not r["format"],
    "wrong-knowledge": lambda r: not r["knowledge"],
    "right-knowledge-wrong-format": lambda r: r["knowledge"] and not r["format"],
    "not-strict": lambda r: not r["strict"],
}
METRICS = ("knowledge", "format", "strict")


def list_units(results: Path, **filters: Any) -> pd.DataFrame:
    """Rows of results/tables/scores.csv matching the given column values."""
    path = results / "tables" / "scores.csv"
    table = load_summary(path)
    for column, value in filters.items():
        if value is None or column == "step":
            continue
        known = sorted({str(v) for v in table[column].dropna()})
        if column in ("model", "task", "method") and str(value) not in known:
            raise InputError(f"{path} has no {column} {value!r}; it has: {', '.join(known) or 'none'}")
        table = table[table[column].astype(str) == str(value)]
    before_step = table
    if filters.get("step") is not None:  # a float column (NaN for the plain methods): 80 is 80.0
        table = table[table["step"] == float(filters["step"])]
    if table.empty:
        steps = sorted({int(s) for s in before_step["step"].dropna()})
        have = f"; evaluated steps of these units: {_listed(steps)}" if filters.get("step") is not None else ""
        raise InputError(
            f"{path}: no unit matches {', '.join(f'{k}={v}' for k, v in filters.items() if v is not None)}{have}"
        )
    return table[[*KEYS, "n", "knowledge", "format", "strict"]]


def _listed(values: list[Any]) -> str:
    return ", ".join(str(v) for v in values) or "none"


# ---- one unit: which it is, what exists ----------------------------------------------------------


@dataclass(frozen=True)
class Unit:
    """One evaluated unit, as resolved against the files present: `steps` are the soft prompt's
    evaluated steps (scores files), `default_step` says the step was not given and is the last."""

    model: str
    role: str
    task: str
    method: str
    step: int | None
    steps: tuple[int, ...] = ()
    default_step: bool = False

    @property
    def label(self) -> str:
        return self.method if self.step is None else f"{self.method} step {self.step}"

    @property
    def key(self) -> tuple[str, str, str, str, int | None]:
        return self.model, self.role, self.task, self.method, self.step


def _folders(folder: Path) -> list[str]:
    """The names of the sub-folders (hidden ones, e.g. a killed job's .parts, left out)."""
    return (
        sorted(p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")) if folder.is_dir() else []
    )


def evaluated_steps(results: Path, model: str, role: str, task: str) -> list[int]:
    """The soft prompt's steps with a scores file, in order."""
    folder = results / SCORES / unit_folder(model, role, task) / SOFT_PROMPT
    names = (p.stem for p in folder.glob("step*.jsonl")) if folder.is_dir() else ()
    return sorted(int(name[4:]) for name in names if name[4:].isdigit())


def evaluated_methods(results: Path, model: str, role: str, task: str) -> list[str]:
    """The methods with a scores file for this model, role and task (soft_prompt: any step)."""
    folder = results / SCORES / unit_folder(model, role, task)
    methods = [p.stem for p in folder.glob("*.jsonl")] if folder.is_dir() else []
    if evaluated_steps(results, model, role, task):
        methods.append(SOFT_PROMPT)
    return sorted(methods)


def resolve_unit(results: Path, model: str, role: str, task: str, method: str, step: int | None) -> Unit:
    """The unit named, checked against the scores files present: an unknown model, role, task,
    method or step is one InputError listing those that exist; a soft-prompt unit without a
    step is the final evaluated step (the largest with a scores file)."""
    check_slug(model, "model")
    check_slug(task, "task")
    scores = results / SCORES
    if not scores.is_dir():
        raise InputError(f"{scores}: no scores folder; run the workflow first, or pass --results <run>/results")
    levels = ((model, "model", scores), (role, "role", scores / model), (task, "task", scores / model / role))
    for name, what, folder in levels:
        known = _folders(folder)
        if name not in known:
            raise InputError(f"{folder} has no {what} {name!r}; {what}s there: {_listed(known)}")
    methods = evaluated_methods(results, model, role, task)
    if method not in methods:
        raise InputError(
            f"{scores / unit_folder(model, role, task)} has no method {method!r}; methods there: {_listed(methods)}"
        )
    if method != SOFT_PROMPT:
        if step is not None:
            raise InputError(f"a step is for the soft_prompt method; {method} has one unit (drop --step {step})")
        return Unit(model, role, task, method, None)
    steps = tuple(evaluated_steps(results, model, role, task))
    if step is None:
        return Unit(model, role, task, method, steps[-1], steps, default_step=True)
    if step not in steps:
        folder = scores / unit_folder(model, role, task) / SOFT_PROMPT
        raise InputError(f"{folder} has no step {step}; evaluated steps: {_listed(list(steps))}")
    return Unit(model, role, task, method, step, steps)


# ---- one unit's files ------------------------------------------------------------------------------


@dataclass
class UnitData:
    """A unit's score rows (test order) with its generations and option log-likelihoods by id,
    and the files they came from."""

    unit: Unit
    scores: list[dict[str, Any]]
    generations: dict[str, dict[str, Any]]
    logliks: dict[str, dict[str, Any]]
    files: list[Path] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return any(row.get("knowledge_from") == "loglik" for row in self.scores)

    def example(self, row: dict[str, Any]) -> dict[str, Any]:
        """A score row joined with its prompt, stop reason and options (the shape format_example reads)."""
        generation = self.generations.get(row["id"], {})
        return {
            **row,
            "prompt": generation.get("prompt"),
            "stop_reason": generation.get("stop_reason"),
            "options": self.logliks.get(row["id"]),
        }


def load_unit(results: Path, unit: Unit) -> UnitData:
    scores_path = unit_path(results / SCORES, *unit.key)
    generations_path = unit_path(results / GENERATIONS, *unit.key)
    logliks_path = unit_path(results / LOGLIK, *unit.key)
    scores = read_jsonl(scores_path, "scores")
    generations = {row["id"]: row for row in read_jsonl(generations_path, "generation")}
    files = [scores_path, generations_path]
    logliks: dict[str, dict[str, Any]] = {}
    if logliks_path.is_file():
        logliks = {row["id"]: row for row in read_jsonl(logliks_path, "log-likelihood")}
        files.append(logliks_path)
    files += [p for p in (_meta(scores_path), _meta(generations_path), _meta(logliks_path)) if p.is_file()]
    return UnitData(unit, scores, generations, logliks, files)


def _meta(path: Path) -> Path:
    return path.with_name(path.stem + ".meta.json")


def unit_examples(
    results: Path, model: str, role: str, task: str, method: str, step: int | None, which: str = "all"
) -> list[dict[str, Any]]:
    """The examples of one unit that pass filter `which`, with prompt, response, verdicts and gold."""
    for name, what in ((model, "model"), (task, "task")):
        check_slug(name, what)
    if which not in FILTERS:
        raise InputError(f"unknown filter {which!r}; use one of {', '.join(FILTERS)}")
    data = load_unit(results, Unit(model, role, task, method, step))
    return [data.example(row) for row in data.scores if FILTERS[which](row)]
