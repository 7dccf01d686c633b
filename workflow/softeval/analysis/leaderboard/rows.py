"""The leaderboard's rows: one per base model and task (estimates with intervals, place, knowledge
change against the baseline method, choice spread, degenerate share and the flags they raise),
and one per model over all tasks (means over tasks, place, the flags raised on any task)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from softeval.analysis.claims.verdicts import HOLDS, REFUTED, within
from softeval.analysis.evidence import (
    COLLAPSE_ENTROPY,
    FORMAT_SATURATED,
    Interval,
    bootstrap_mean,
    choice_spread,
    paired_bootstrap,
)
from softeval.analysis.leaderboard.checks import degenerate_share, loglik_choices, response_choices
from softeval.analysis.leaderboard.places import Place, place_models
from softeval.analysis.leaderboard.units import METRICS, _step, _Units, method_label
from softeval.analysis.tables import ALL_TASKS
from softeval.layout import unit_path
from softeval.names import BASE, POST

FLAT, MOVED, NOT_SHOWN_FLAT, NOT_EVALUATED = "flat", "moved", "not shown flat", "n/a"
FLAG_COLUMNS = (
    "flag_format",
    "flag_knowledge_moved",
    "flag_knowledge_moved_post",
    "flag_choices_collapsed",
    "flag_degenerate",
)
FLAG_NAMES = {
    "flag_format": f"format < {FORMAT_SATURATED}",
    "flag_knowledge_moved": "knowledge {state} vs {baseline} (base)",
    "flag_knowledge_moved_post": "knowledge {state} vs {baseline} (post)",
    "flag_choices_collapsed": "choices collapsed",
    "flag_degenerate": "degenerate responses",
}


@dataclass(frozen=True)
class _Settings:
    final_step: int
    metric: str
    baseline: str
    bootstrap: int
    seed: int
    margin: float
    format_threshold: float
    degenerate_threshold: float


COLUMNS = [
    "task",
    "rank",
    "place",
    "model",
    "method",
    "n",
    *(f"{m}{suffix}" for m in METRICS for suffix in ("", "_low", "_high")),
    "tied_with",
    "vs_above",
    "above",
    "diff_above",
    "diff_above_low",
    "diff_above_high",
    "knowledge_vs_baseline",
    "knowledge_change",
    "knowledge_change_low",
    "knowledge_change_high",
    "knowledge_vs_baseline_post",
    "knowledge_change_post",
    "choice_entropy",
    "choice_top",
    "degenerate",
    "degenerate_source",
    *FLAG_COLUMNS,
    "flags",
]


def _place_columns(place: Place) -> dict:
    diff = place.difference
    return {
        "rank": place.rank,
        "place": place.place,
        "tied_with": ", ".join(place.tied_with),
        "vs_above": place.vs_above,
        "above": ", ".join(place.above),
        "diff_above": math.nan if diff is None else diff.estimate,
        "diff_above_low": math.nan if diff is None else diff.low,
        "diff_above_high": math.nan if diff is None else diff.high,
    }


def _knowledge_change(
    units: _Units, model: str, role: str, task: str, method: str, s: _Settings
) -> tuple[str, Interval | None]:
    """The knowledge change of `method` against the baseline method, same model and role: its
    state (FLAT: the 90% interval within ±margin; MOVED: the 95% one wholly outside; NOT_SHOWN_FLAT: across
    the margin; NOT_EVALUATED: a unit missing, or the method is the baseline) and interval."""
    if method == s.baseline or not all(units.exists(model, role, task, m, s.final_step) for m in (method, s.baseline)):
        return NOT_EVALUATED, None
    interval = paired_bootstrap(
        [
            (
                units.values(model, role, task, method, s.final_step, "knowledge"),
                units.values(model, role, task, s.baseline, s.final_step, "knowledge"),
            )
        ],
        None,
        s.bootstrap,
        s.seed,
        [task],
    )
    verdict = within(interval, s.margin)
    return (FLAT if verdict == HOLDS else MOVED if verdict == REFUTED else NOT_SHOWN_FLAT), interval


def _task_rows(
    units: _Units,
    models: Sequence[str],
    task: str,
    method: str,
    closed: bool,
    values: dict[str, dict[str, np.ndarray]],
    loglik: Path | None,
    s: _Settings,
) -> list[dict]:
    def difference(upper: str, lower: str) -> Interval:
        pair = (values[upper][s.metric], values[lower][s.metric])
        return paired_bootstrap([pair], None, s.bootstrap, s.seed, [task])

    places = place_models({m: float(values[m][s.metric].mean()) for m in models}, difference)
    rows = []
    for model in models:
        row: dict[str, Any] = {"task": task, "model": model, "method": method_label(method, s.final_step)}
        row["n"] = len(values[model]["strict"])
        for metric in METRICS:
            iv = bootstrap_mean([values[model][metric]], s.bootstrap, s.seed, [task])
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = iv.estimate, iv.low, iv.high
        row |= _place_columns(places[model])
        state, change = _knowledge_change(units, model, BASE, task, method, s)
        row["knowledge_vs_baseline"] = state
        row["knowledge_change"] = math.nan if change is None else change.estimate
        row["knowledge_change_low"] = math.nan if change is None else change.low
        row["knowledge_change_high"] = math.nan if change is None else change.high
        post_state, post_change = _knowledge_change(units, model, POST, task, method, s)
        row["knowledge_vs_baseline_post"] = post_state
        row["knowledge_change_post"] = math.nan if post_change is None else post_change.estimate
        collapsed: bool | None = None
        row["choice_entropy"], row["choice_top"] = math.nan, ""
        if closed:
            path = unit_path(loglik, model, BASE, task, method, _step(method, s.final_step)) if loglik else None
            source, choices = "loglik", None
            if path is not None and path.is_file():
                choices = loglik_choices(path)
            else:
                source, choices = "response", response_choices(units(model, BASE, task, method, s.final_step))
            if choices is not None:
                spread = choice_spread(*choices)
                row["choice_entropy"] = spread.entropy
                row["choice_top"] = f"{spread.top_letter} {spread.top_share:.0%} ({source})"
                collapsed = spread.entropy < COLLAPSE_ENTROPY
        share, source = degenerate_share(units(model, BASE, task, method, s.final_step))
        row["degenerate"], row["degenerate_source"] = share, source
        row["flag_format"] = bool(row["format"] < s.format_threshold)
        # a finding, not a lack of evidence: the interval wholly beyond the margin (a pilot run's
        # few examples leave most units "not shown flat", which the state columns still say)
        row["flag_knowledge_moved"] = None if state == NOT_EVALUATED else state == MOVED
        row["flag_knowledge_moved_post"] = None if post_state == NOT_EVALUATED else post_state == MOVED
        row["flag_choices_collapsed"] = collapsed
        row["flag_degenerate"] = None if math.isnan(share) else bool(share > s.degenerate_threshold)
        row["flags"] = "; ".join(_flag_texts(row, s))
        rows.append(row)
    return rows


def _flag_texts(row: dict, s: _Settings) -> list[str]:
    texts = []
    for column in FLAG_COLUMNS:
        if row[column] is True:
            state = row["knowledge_vs_baseline_post" if column.endswith("_post") else "knowledge_vs_baseline"]
            texts.append(FLAG_NAMES[column].format(state=state, baseline=s.baseline))
    return texts


def _overall_rows(
    models: Sequence[str],
    tasks: Sequence[str],
    used: Mapping[str, str],
    values: Mapping[str, Mapping[str, Mapping[str, np.ndarray]]],
    per_task: Mapping[str, list[dict]],
    s: _Settings,
) -> list[dict]:
    """One row per model over all tasks: means with intervals (each task resampled with its own
    index matrix), place, and every flag raised on any task."""

    def difference(upper: str, lower: str) -> Interval:
        pairs = [(values[t][upper][s.metric], values[t][lower][s.metric]) for t in tasks]
        return paired_bootstrap(pairs, None, s.bootstrap, s.seed, list(tasks))

    means = {m: float(np.mean([values[t][m][s.metric].mean() for t in tasks])) for m in models}
    places = place_models(means, difference)
    methods = {method_label(used[t], s.final_step) for t in tasks}
    method = (
        methods.pop() if len(methods) == 1 else "; ".join(f"{t}: {method_label(used[t], s.final_step)}" for t in tasks)
    )
    rows = []
    for model in models:
        row: dict[str, Any] = {"task": ALL_TASKS, "model": model, "method": method}
        row["n"] = sum(len(values[t][model]["strict"]) for t in tasks)
        for metric in METRICS:
            iv = bootstrap_mean([values[t][model][metric] for t in tasks], s.bootstrap, s.seed, list(tasks))
            row[metric], row[f"{metric}_low"], row[f"{metric}_high"] = iv.estimate, iv.low, iv.high
        row |= _place_columns(places[model])
        units = [next(r for r in per_task[t] if r["model"] == model) for t in tasks]
        shares = [u["degenerate"] for u in units if not math.isnan(u["degenerate"])]
        row["degenerate"] = float(np.mean(shares)) if shares else math.nan
        row["degenerate_source"] = ", ".join(sorted({u["degenerate_source"] for u in units} - {""}))
        for column in ("knowledge_change", "knowledge_change_low", "knowledge_change_high", "knowledge_change_post"):
            row[column] = math.nan
        row["knowledge_vs_baseline"] = row["knowledge_vs_baseline_post"] = ""
        row["choice_entropy"], row["choice_top"] = math.nan, ""
        texts = []
        for column in FLAG_COLUMNS:
            raised = [u["task"] for u in units if u[column] is True]
            tested = [u for u in units if u[column] is not None]
            row[column] = bool(raised) if tested else None
            if raised:
                name = FLAG_NAMES[column].format(state="moved", baseline=s.baseline)
                texts.append(f"{name} ({', '.join(raised)})")
        row["flags"] = "; ".join(texts)
        rows.append(row)
    return sorted(rows, key=lambda r: (r["rank"], r["model"]))
