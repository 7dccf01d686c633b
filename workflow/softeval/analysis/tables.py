"""The paper's evidence from the tidy scores: swap distances, score gaps, knowledge vs format.

Rankings order the base models by their strict (benchmark) score under a method and
compare it with the ranking of their post-trained twins under the reference method
(zero-shot by default: how post-trained models are normally scored). Ties are broken
alphabetically (the paper's policy), with the range over all tie-breaks beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from softeval.analysis.evidence import MetricReader, bias_shifted_interval, bootstrap_mean, task_resamples
from softeval.analysis.ranking import (
    bootstrap_swap_distances,
    kemeny_consensus,
    kendall_tau_b,
    normalized_swap_distance,
    pairwise_accuracy,
    rank_by_score,
    spearman_rho,
    swap_distance,
    swap_distance_with_ties,
)
from softeval.settings import AnalysisSettings

BASELINES = ("zero_shot", "few_shot")
ALL_TASKS = "all tasks"


def unit_rows(summary: pd.DataFrame, role: str, method: str, step: int | None, task: str | None = None) -> pd.DataFrame:
    """The rows of one role and method (soft_prompt at `step`), optionally one task."""
    rows = summary[(summary["role"] == role) & (summary["method"] == method)]
    rows = rows[rows["step"] == step] if method == "soft_prompt" else rows[rows["step"].isna()]
    return rows if task is None else rows[rows["task"] == task]


def scores_of(summary: pd.DataFrame, role: str, method: str, step: int | None, task: str, metric: str) -> dict:
    rows = unit_rows(summary, role, method, step, task)
    return dict(zip(rows["model"], rows[metric].astype(float), strict=True))


def methods_in(summary: pd.DataFrame) -> list[str]:
    return [m for m in ("zero_shot", "few_shot", "soft_prompt") if m in set(summary["method"])]


PerExample = Callable[[str, str, str, int | None], Mapping[str, np.ndarray]]


def swap_distance_table(
    summary: pd.DataFrame, per_example: PerExample, settings: AnalysisSettings, truth: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """One row per task and method (and per method summed over tasks): how far the base
    ranking is from the post-trained ranking, with tie range, correlations, bootstrap CI."""
    rows = []
    draws: dict[str, np.ndarray] = {}
    for task in sorted(set(summary["task"])):
        reference = scores_of(
            summary,
            "post",
            settings.reference_method,
            _step(settings.reference_method, settings),
            task,
            settings.metric,
        )
        reference_ranking = rank_by_score(reference)
        reference_examples = per_example(
            "post", task, settings.reference_method, _step(settings.reference_method, settings)
        )
        n_examples = len(next(iter(reference_examples.values())))
        index = task_resamples(task, n_examples, settings.bootstrap, settings.seed)
        for method in methods_in(summary):
            step = _step(method, settings)
            base = scores_of(summary, "base", method, step, task, settings.metric)
            ties = swap_distance_with_ties(base, reference)
            boot = bootstrap_swap_distances(per_example("base", task, method, step), reference_examples, index)
            draws[method] = draws.get(method, 0) + boot
            interval = bias_shifted_interval(ties.alphabetical, boot)
            row = {
                "task": task,
                "method": method,
                "base_ranking": " > ".join(rank_by_score(base)),
                "post_ranking": " > ".join(reference_ranking),
                "distance": ties.alphabetical,
                "distance_min": ties.minimum,
                "distance_max": ties.maximum,
                "normalized": normalized_swap_distance(rank_by_score(base), reference_ranking),
                "ci_low": max(0.0, interval.low),  # a distance is never negative
                "ci_high": interval.high,
                "kendall_tau_b": kendall_tau_b(base, reference),
                "spearman_rho": spearman_rho(base, reference),
                "pairwise_accuracy": pairwise_accuracy(base, reference),
            }
            if truth is not None:
                row["truth_distance"] = swap_distance(rank_by_score(base), rank_by_score(truth))
            rows.append(row)
    table = pd.DataFrame(rows)
    totals = []
    for method in methods_in(summary):
        part = table[table["method"] == method]
        total = {
            "task": ALL_TASKS,
            "method": method,
            "distance": int(part["distance"].sum()),
            "distance_min": int(part["distance_min"].sum()),
            "distance_max": int(part["distance_max"].sum()),
            "normalized": float(part["normalized"].mean()),
            "ci_low": max(0.0, bias_shifted_interval(int(part["distance"].sum()), draws[method]).low),
            "ci_high": bias_shifted_interval(int(part["distance"].sum()), draws[method]).high,
            # an average over tasks is undefined where a task's is (a constant table has no order)
            "kendall_tau_b": float(part["kendall_tau_b"].mean(skipna=False)),
            "spearman_rho": float(part["spearman_rho"].mean(skipna=False)),
            "pairwise_accuracy": float(part["pairwise_accuracy"].mean(skipna=False)),
        }
        if truth is not None:
            total["truth_distance"] = int(part["truth_distance"].sum())
        totals.append(total)
    return pd.concat([table, pd.DataFrame(totals)], ignore_index=True)


def _step(method: str, settings: AnalysisSettings) -> int | None:
    return settings.final_step if method == "soft_prompt" else None


def score_gap_table(summary: pd.DataFrame, settings: AnalysisSettings) -> pd.DataFrame:
    """Per task and method (and over all tasks): post-trained minus base score of the same
    model under the same method, averaged over models (signed and absolute)."""
    frames = []
    for method in methods_in(summary):
        step = _step(method, settings)
        scores = {
            role: unit_rows(summary, role, method, step).set_index(["task", "model"])[settings.metric]
            for role in ("base", "post")
        }
        frames.append(pd.DataFrame(scores).dropna().reset_index().assign(method=method))
    pairs = pd.concat(frames, ignore_index=True)
    pairs["gap"] = pairs["post"] - pairs["base"]
    pairs["gap_abs"] = pairs["gap"].abs()
    columns = {
        "gap_abs": ("gap_abs", "mean"),
        "gap_signed": ("gap", "mean"),
        "base": ("base", "mean"),
        "post": ("post", "mean"),
    }
    per_task = pairs.groupby(["task", "method"], sort=False).agg(**columns).reset_index()
    overall = pairs.groupby("method", sort=False).agg(**columns).reset_index().assign(task=ALL_TASKS)
    table = pd.concat([per_task, overall], ignore_index=True)[["task", "method", *columns]]
    return table.sort_values(["task", "method"], key=lambda c: c.map(_order)).reset_index(drop=True)


def _order(value: object) -> object:
    order = {"zero_shot": 0, "few_shot": 1, "soft_prompt": 2, ALL_TASKS: "~"}
    return order.get(value, value)  # type: ignore[arg-type]


def knowledge_format_table(
    summary: pd.DataFrame, read: MetricReader | None = None, settings: AnalysisSettings | None = None
) -> pd.DataFrame:
    """Mean knowledge, format and strict accuracy per role, method and step (over models and tasks).

    With `read` (per-example values) each mean gets its own 95% interval: a bootstrap of the
    mean over units, every task's units resampled with that task's one index matrix (not the
    mean of the units' bounds, which is no interval of anything)."""
    columns = ["knowledge", "format", "strict"]
    frame = summary.assign(step=summary["step"].astype("Int64"))
    grouped = frame.groupby(["role", "method", "step"], dropna=False, sort=False)
    table = grouped[columns].mean().reset_index()
    table["units"] = grouped.size().to_numpy()
    if read is not None and settings is not None:
        for column in columns:
            bounds = []
            for (role, method, step), rows in grouped:
                key_step = None if pd.isna(step) else int(step)
                arrays = [read((role, r.model, r.task, method, key_step), column) for r in rows.itertuples()]
                iv = bootstrap_mean(arrays, settings.bootstrap, settings.seed, list(rows["task"]))
                bounds.append((iv.low, iv.high))
            table[f"{column}_low"], table[f"{column}_high"] = zip(*bounds, strict=True)
    table["_m"] = table["method"].map(_order)
    return table.sort_values(["role", "_m", "step"], na_position="first").drop(columns="_m").reset_index(drop=True)


def consensus_table(swap: pd.DataFrame, truth: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Per method: the Kemeny consensus of the per-task base rankings (exact, PuLP), its total
    distance to them, and its distance to the consensus of the post-trained rankings."""
    per_task = swap[swap["task"] != ALL_TASKS]
    post_consensus, _ = kemeny_consensus([r.split(" > ") for r in per_task.drop_duplicates("task")["post_ranking"]])
    rows = []
    for method, part in per_task.groupby("method", sort=False):
        consensus, total = kemeny_consensus([r.split(" > ") for r in part["base_ranking"]])
        row = {
            "method": method,
            "base_consensus": " > ".join(consensus),
            "kemeny_distance": total,
            "post_consensus": " > ".join(post_consensus),
            "distance_to_post": swap_distance(consensus, post_consensus),
        }
        if truth is not None:
            row["distance_to_truth"] = swap_distance(consensus, rank_by_score(truth))
        rows.append(row)
    return pd.DataFrame(rows)
