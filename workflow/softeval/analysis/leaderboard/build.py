"""Building the leaderboard: the base models and tasks of a scores folder, the method each task is
ranked by, every row, and the caption that says how the table was made; with a run's analysis
settings (`leaderboard_from_settings`) as the tables job builds it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from softeval.analysis.evidence import COLLAPSE_ENTROPY, FORMAT_SATURATED, KNOWLEDGE_FLAT
from softeval.analysis.leaderboard.checks import DEGENERATE_SHARE
from softeval.analysis.leaderboard.rows import COLUMNS, _overall_rows, _Settings, _task_rows
from softeval.analysis.leaderboard.units import (
    FALLBACKS,
    METRICS,
    _Units,
    base_models,
    choose_method,
    method_label,
    tasks_of,
)
from softeval.analysis.tables import ALL_TASKS
from softeval.io import check_slug
from softeval.names import BASE, SOFT_PROMPT, ZERO_SHOT
from softeval.schema import InputError
from softeval.settings import AnalysisSettings


def build_leaderboard(
    scores_root: Path | str,
    models: Sequence[str] | None,
    tasks: Sequence[str] | None,
    final_step: int,
    *,
    metric: str = "strict",
    method: str = SOFT_PROMPT,
    fallbacks: Sequence[str] = FALLBACKS,
    knowledge_baseline: str = ZERO_SHOT,
    bootstrap: int = 1000,
    seed: int = 0,
    loglik_root: Path | str | None = None,
    closed_tasks: Sequence[str] = (),
    margin: float = KNOWLEDGE_FLAT,
    format_threshold: float = FORMAT_SATURATED,
    degenerate_threshold: float = DEGENERATE_SHARE,
) -> pd.DataFrame:
    """The leaderboard of the base models (None: every model with a base role under
    scores_root) on `tasks` (None: every task they were scored on), ranked by `metric`.

    scores_root: results/scores; loglik_root: results/loglik (closed tasks' chosen options; without
    it, or without a unit's file, the letters the responses start with). A task is closed when
    named in `closed_tasks` or when its score rows take knowledge from option likelihoods. The
    table's `attrs` hold "caption" and "metric" (what `write_leaderboard` writes)."""
    if metric not in METRICS:
        raise InputError(f"leaderboard: metric {metric!r}; use one of {', '.join(METRICS)}")
    root = Path(scores_root)
    models = list(models) if models is not None else base_models(root)
    for model in models:
        check_slug(model, "model")
        if not (root / model / BASE).is_dir():
            raise InputError(
                f"{root / model / 'base'}: no scores of base model {model}; run the workflow for it, or leave it out"
            )
    if not models:
        raise InputError(f"{root}: no base model has scores; run the workflow first")
    tasks = list(tasks) if tasks is not None else tasks_of(root, models)
    if not tasks:
        raise InputError(f"{root}: no task has scores of the base models; run the workflow first")
    for task in tasks:
        check_slug(task, "task")
    preferred = list(dict.fromkeys([method, *fallbacks]))
    units = _Units(root)
    loglik = Path(loglik_root) if loglik_root is not None else None
    settings = _Settings(
        final_step, metric, knowledge_baseline, bootstrap, seed, margin, format_threshold, degenerate_threshold
    )

    used: dict[str, str] = {}
    values: dict[str, dict[str, dict[str, np.ndarray]]] = {}  # task -> model -> metric -> per example
    rows: list[dict] = []
    per_task: dict[str, list[dict]] = {}
    for task in tasks:
        chosen = choose_method(units, models, task, preferred, final_step)
        used[task] = chosen
        values[task] = {m: {k: units.values(m, BASE, task, chosen, final_step, k) for k in METRICS} for m in models}
        closed = task in closed_tasks or any(
            row.get("knowledge_from") == "loglik" for row in units(models[0], BASE, task, chosen, final_step)
        )
        task_rows = _task_rows(units, models, task, chosen, closed, values[task], loglik, settings)
        per_task[task] = task_rows
    rows.extend(_overall_rows(models, tasks, used, values, per_task, settings))
    for task in tasks:
        rows.extend(sorted(per_task[task], key=lambda r: (r["rank"], r["model"])))
    table = pd.DataFrame(rows, columns=COLUMNS)
    table.attrs["metric"] = metric
    table.attrs["methods"] = dict(used)
    table.attrs["caption"] = leaderboard_caption(used, settings, preferred[0])
    return table


def leaderboard_caption(used: Mapping[str, str], s: _Settings, preferred: str) -> str:
    fallback = [t for t, m in used.items() if m != preferred]
    return (
        f"Leaderboard of base models: {method_label(preferred, s.final_step)}"
        + (
            f" (not evaluated for every model of {', '.join(fallback)}: the method column says which was used)"
            if fallback
            else ""
        )
        + f"; ranked by {s.metric} accuracy ({ALL_TASKS}: mean over tasks), tied estimates share a place (k=), "
        "tied rows listed by name only; _low/_high: 95% percentile-bootstrap interval over test examples (one "
        "index matrix per task, shared by every model); vs_above: paired bootstrap of the difference to each "
        "model of the place above (diff_above: the least separable), separable when its 95% interval lies above "
        f"zero (per adjacent pair, uncorrected). Flags: format < {s.format_threshold}; knowledge moved vs "
        f"{s.baseline} (the 95% interval of the change wholly outside ±{s.margin}; the state columns also "
        "say 'not shown flat' when it crosses the margin), base and post-trained role; chosen options "
        f"collapsed (normalised entropy < {COLLAPSE_ENTROPY}, "
        f"closed tasks); degenerate responses > {s.degenerate_threshold:.0%}"
    )


def leaderboard_from_settings(
    scores_root: Path | str,
    settings: AnalysisSettings,
    *,
    models: Sequence[str] | None = None,
    tasks: Sequence[str] | None = None,
    loglik_root: Path | str | None = None,
    method: str = SOFT_PROMPT,
    fallbacks: Sequence[str] = FALLBACKS,
) -> pd.DataFrame:
    """build_leaderboard with the analysis settings' final step, metric, bootstrap, seed and closed tasks."""
    return build_leaderboard(
        scores_root,
        models,
        tasks,
        settings.final_step,
        metric=settings.metric,
        method=method,
        fallbacks=fallbacks,
        bootstrap=settings.bootstrap,
        seed=settings.seed,
        loglik_root=loglik_root,
        closed_tasks=settings.closed_tasks,
    )
