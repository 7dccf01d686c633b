"""Artifact review: list the evaluated units and show the examples behind any table cell.

Everything is read from results/: the tidy table for the list, and for a cell the
per-example verdicts joined with the generation (full prompt, stop reason) and, for
closed tasks, the option log-likelihoods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.aggregate import KEYS, load_summary
from softeval.io import check_slug, read_jsonl
from softeval.layout import GENERATIONS, LOGLIK, SCORES, unit_path
from softeval.schema import InputError

FILTERS = {
    "all": lambda r: True,
    "wrong-format": lambda r: not r["format"],
    "wrong-knowledge": lambda r: not r["knowledge"],
    "right-knowledge-wrong-format": lambda r: r["knowledge"] and not r["format"],
    "not-strict": lambda r: not r["strict"],
}


def list_units(results: Path, **filters: Any) -> pd.DataFrame:
    """Rows of results/tables/scores.csv matching the given column values."""
    path = results / "tables" / "scores.csv"
    table = load_summary(path)
    for column, value in filters.items():
        if value is None:
            continue
        known = sorted({str(v) for v in table[column].dropna()})
        if column in ("model", "task", "method") and str(value) not in known:
            raise InputError(f"{path} has no {column} {value!r}; it has: {', '.join(known) or 'none'}")
        if column == "step":  # a float column (NaN for the plain methods): 80 is 80.0
            table = table[table["step"] == float(value)]
        else:
            table = table[table[column].astype(str) == str(value)]
    if table.empty:
        raise InputError(
            f"{path}: no unit matches {', '.join(f'{k}={v}' for k, v in filters.items() if v is not None)}"
        )
    return table[[*KEYS, "n", "knowledge", "format", "strict"]]


def unit_examples(
    results: Path, model: str, role: str, task: str, method: str, step: int | None, which: str = "all"
) -> list[dict[str, Any]]:
    """The examples of one unit that pass filter `which`, with prompt, response, verdicts and gold."""
    for name, what in ((model, "model"), (task, "task")):
        check_slug(name, what)
    if which not in FILTERS:
        raise InputError(f"unknown filter {which!r}; use one of {', '.join(FILTERS)}")
    unit = (model, role, task, method, step)
    scores = read_jsonl(unit_path(results / SCORES, *unit), "scores")
    generations = {row["id"]: row for row in read_jsonl(unit_path(results / GENERATIONS, *unit), "generation")}
    logliks_path = unit_path(results / LOGLIK, *unit)
    logliks = {row["id"]: row for row in read_jsonl(logliks_path, "log-likelihood")} if logliks_path.is_file() else {}
    out = []
    for row in scores:
        if FILTERS[which](row):
            generation = generations.get(row["id"], {})
            out.append(
                {
                    **row,
                    "prompt": generation.get("prompt"),
                    "stop_reason": generation.get("stop_reason"),
                    "options": logliks.get(row["id"]),
                }
            )
    return out


def verdict_text(example: dict[str, Any], kind: str) -> str:
    """One verdict, "kind=yes" or "kind=no"; a format "no" names why where the score row says the
    response is degenerate (punctuation runs, one unit repeated, cut at its budget)."""
    text = f"{kind}={'yes' if example[kind] else 'no'}"
    if kind == "format" and not example[kind] and example.get("degenerate"):
        text += f" (degenerate: {example['degenerate']})"
    return text


def format_example(example: dict[str, Any]) -> str:
    verdicts = ", ".join(verdict_text(example, k) for k in ("knowledge", "format", "strict"))
    lines = [f"--- {example['id']}  ({verdicts}; knowledge from {example.get('knowledge_from', 'judge')})"]
    lines += [f"prompt   | {line}" for line in (example.get("prompt") or "").splitlines()]
    lines.append(f"response | {example['response']!r}  (stopped: {example.get('stop_reason')})")
    lines.append(f"gold     | {example['gold']!r}")
    if example.get("aliases"):
        lines.append(f"aliases  | {', '.join(repr(a) for a in example['aliases'])}")
    options = example.get("options")
    if options:
        ranked = ", ".join(f"{options['options'][k]} ({options['logliks'][k]:.2f})" for k in options["ranking"])
        lines.append(f"options  | by log-likelihood: {ranked}")
    return "\n".join(lines)
