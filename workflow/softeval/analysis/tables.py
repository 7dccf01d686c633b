"""The paper's evidence from the tidy scores: swap distances, score gaps, knowledge vs format.

Rankings order the base models by their strict (benchmark) score under a method and
compare it with the ranking of their post-trained twins under the reference method
(zero-shot by default: how post-trained models are normally scored). Ties are broken
alphabetically (the paper's policy), with the range over all tie-breaks beside it.

A model may have no post-trained twin (a base-only entry). The comparisons with post-trained
models (rankings, score gaps) are computed over the models that have one, and a `note` column
names the models left out; with fewer than two such models no ranking is compared, and the swap
distance table says why in every row ("not applicable: ...") instead of a number. Where every
model has a twin the tables are as they always were (no note column).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

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
from softeval.io import atomic_file
from softeval.layout import UnitKey
from softeval.names import BASE, FEW_SHOT, METHODS, POST, ROLES, SOFT_PROMPT, ZERO_SHOT
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

BASELINES = (ZERO_SHOT, FEW_SHOT)
ALL_TASKS = "all tasks"


def unit_rows(summary: pd.DataFrame, role: str, method: str, step: int | None, task: str | None = None) -> pd.DataFrame:
    """The rows of one role and method (soft_prompt at `step`), optionally one task."""
    rows = summary[(summary["role"] == role) & (summary["method"] == method)]
    rows = rows[rows["step"] == step] if method == SOFT_PROMPT else rows[rows["step"].isna()]
    return rows if task is None else rows[rows["task"] == task]


def scores_of(summary: pd.DataFrame, role: str, method: str, step: int | None, task: str, metric: str) -> dict:
    rows = unit_rows(summary, role, method, step, task)
    return dict(zip(rows["model"], rows[metric].astype(float), strict=True))


def methods_in(summary: pd.DataFrame) -> list[str]:
    return [m for m in METHODS if m in set(summary["method"])]


def models_in(summary: pd.DataFrame, role: str | None = None) -> list[str]:
    """The models with units of this role (any role: every model), in name order."""
    rows = summary if role is None else summary[summary["role"] == role]
    return sorted(set(rows["model"]))


def twinned_models(summary: pd.DataFrame) -> list[str]:
    """The models scored in both roles: what every base-vs-post comparison is computed over."""
    return sorted(set(models_in(summary, BASE)) & set(models_in(summary, POST)))


def base_only_models(summary: pd.DataFrame) -> list[str]:
    """The models without a post-trained twin (no post units)."""
    return sorted(set(models_in(summary)) - set(models_in(summary, POST)))


def _are(models: list[str]) -> str:
    return f"{', '.join(models)} {'is' if len(models) == 1 else 'are'}"


def ranking_not_applicable(summary: pd.DataFrame) -> str | None:
    """Why base rankings cannot be compared with post-trained rankings in this run (None: they can)."""
    twinned, base_only = twinned_models(summary), base_only_models(summary)
    if len(twinned) >= 2:
        return None
    if len(models_in(summary)) < 2:
        return "one model: no ranking to compare"
    if not twinned:
        return "no post-trained models (every model is base only)"
    return f"fewer than 2 models with a post-trained twin ({twinned[0]} has one; {_are(base_only)} base only)"


def twin_note(summary: pd.DataFrame, prefix: str) -> str | None:
    """'<prefix> a, b; no post-trained twin: c' where some models have no twin (None where all do)."""
    base_only = base_only_models(summary)
    if not base_only:
        return None
    return f"{prefix} {', '.join(twinned_models(summary))}; no post-trained twin: {', '.join(base_only)}"


SWAP_COLUMNS = (
    "distance",
    "distance_min",
    "distance_max",
    "normalized",
    "ci_low",
    "ci_high",
    "kendall_tau_b",
    "spearman_rho",
    "pairwise_accuracy",
)


def _not_applicable_rows(summary: pd.DataFrame, columns: tuple[str, ...], note: str) -> pd.DataFrame:
    """One row per task and method (and per method over all tasks), every value empty, the reason beside it."""
    tasks = [*sorted(set(summary["task"])), ALL_TASKS]
    rows = [
        {"task": task, "method": method, **dict.fromkeys(columns, np.nan), "note": f"not applicable: {note}"}
        for task in tasks
        for method in methods_in(summary)
    ]
    return pd.DataFrame(rows, columns=["task", "method", *columns, "note"])


PerExample = Callable[[str, str, str, int | None], Mapping[str, np.ndarray]]
# (task, method) -> bootstrap draws of the base ranking's swap distance to the post-trained ranking
SwapDraws = dict[tuple[str, str], np.ndarray]
SWAP_DRAW_COLUMNS = ("task", "method", "draw", "distance")  # the draws' file (write_swap_draws)


def swap_draws(summary: pd.DataFrame, per_example: PerExample, settings: AnalysisSettings) -> SwapDraws:
    """The swap-distance bootstrap, computed once a run: per task and method, the distance between
    the base ranking and the post-trained ranking (reference method) over the task's resamples
    (evidence.task_resamples), both sides resampled alike, as both would change on another test
    set. The swap table's intervals and claim 3's differences read these draws (the tables job
    writes them: write_swap_draws). Empty where no ranking is compared."""
    if ranking_not_applicable(summary):
        return {}
    units = [(method, _step(method, settings)) for method in methods_in(summary)]
    return {(task, method): d for (task, method, _), d in _draws(summary, per_example, settings, units).items()}


def swap_draws_at(
    summary: pd.DataFrame, per_example: PerExample, settings: AnalysisSettings, method: str, step: int | None
) -> dict[str, np.ndarray]:
    """task -> swap_draws' draws for one method at one step (claim 3 reads the soft prompt's first
    snapshot too: the prompt before tuning)."""
    return {task: d for (task, _, _), d in _draws(summary, per_example, settings, [(method, step)]).items()}


def _draws(
    summary: pd.DataFrame, per_example: PerExample, settings: AnalysisSettings, units: list[tuple[str, int | None]]
) -> dict[tuple[str, str, int | None], np.ndarray]:
    """(task, method, step) -> the draws, each task's reference ranking read once."""
    ranked = twinned_models(summary)
    reference_step = _step(settings.reference_method, settings)
    draws = {}
    for task in sorted(set(summary["task"])):
        reference = per_example(POST, task, settings.reference_method, reference_step)
        reference = {m: reference[m] for m in ranked}
        index = task_resamples(task, len(reference[ranked[0]]), settings.bootstrap, settings.seed)
        for method, step in units:
            base = per_example(BASE, task, method, step)
            draws[(task, method, step)] = bootstrap_swap_distances({m: base[m] for m in ranked}, reference, index)
    return draws


def summed_swap_draws(draws: SwapDraws, method: str) -> np.ndarray:
    """A method's draws of the swap distance summed over tasks (tasks in name order)."""
    return np.sum([draws[key] for key in sorted(draws) if key[1] == method], axis=0)


def write_swap_draws(draws: SwapDraws, path: Path) -> None:
    """The draws as a long table (task, method, draw, distance) in Parquet."""
    parts = [
        pd.DataFrame({"task": task, "method": method, "draw": np.arange(len(d)), "distance": d})
        for (task, method), d in sorted(draws.items())
    ]
    table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=SWAP_DRAW_COLUMNS)
    with atomic_file(path) as tmp:
        table.to_parquet(tmp, index=False)


def read_swap_draws(path: Path, bootstrap: int) -> SwapDraws:
    """write_swap_draws' table back as draws (in draw order), each of `bootstrap` resamples (the
    settings' count: a file from a run with another count is refused)."""
    table = pd.read_parquet(path)
    if list(table.columns) != list(SWAP_DRAW_COLUMNS):
        wanted = list(SWAP_DRAW_COLUMNS)
        raise InputError(f"{path}: columns {list(table.columns)}, not {wanted}; rerun `softeval tables` to write it")
    draws = {
        (str(task), str(method)): group.sort_values("draw")["distance"].to_numpy()
        for (task, method), group in table.groupby(["task", "method"], sort=True)
    }
    wrong = sorted(key for key, d in draws.items() if len(d) != bootstrap)
    if wrong:
        raise InputError(
            f"{path}: {len(draws[wrong[0]])} draws for {wrong[0][0]}/{wrong[0][1]}, not the settings' "
            f"bootstrap of {bootstrap}; rerun `softeval tables` with the same --settings"
        )
    return draws


def swap_distance_table(
    summary: pd.DataFrame,
    per_example: PerExample,
    settings: AnalysisSettings,
    truth: Mapping[str, float] | None = None,
    draws: SwapDraws | None = None,
) -> pd.DataFrame:
    """One row per task and method (and per method summed over tasks): how far the base
    ranking is from the post-trained ranking, with tie range, correlations, bootstrap CI
    (from `draws`, swap_draws' for this run; computed here when not given).

    Both rankings order the models with a post-trained twin (the others are named in a `note`
    column); with fewer than two of them every row is not applicable, with the reason."""
    missing = ranking_not_applicable(summary)
    if missing:
        columns = ("base_ranking", "post_ranking", *SWAP_COLUMNS) + (("truth_distance",) if truth is not None else ())
        return _not_applicable_rows(summary, columns, missing)
    ranked = twinned_models(summary)
    draws = swap_draws(summary, per_example, settings) if draws is None else draws

    def only_ranked(table: Mapping[str, float]) -> dict:
        return {m: table[m] for m in ranked}

    truth = None if truth is None else only_ranked(truth)
    rows = []
    for task in sorted(set(summary["task"])):
        reference = only_ranked(
            scores_of(
                summary,
                POST,
                settings.reference_method,
                _step(settings.reference_method, settings),
                task,
                settings.metric,
            )
        )
        reference_ranking = rank_by_score(reference)
        for method in methods_in(summary):
            step = _step(method, settings)
            base = only_ranked(scores_of(summary, BASE, method, step, task, settings.metric))
            ties = swap_distance_with_ties(base, reference)
            interval = bias_shifted_interval(ties.alphabetical, draws[(task, method)])
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
        total_interval = bias_shifted_interval(int(part["distance"].sum()), summed_swap_draws(draws, method))
        total = {
            "task": ALL_TASKS,
            "method": method,
            "distance": int(part["distance"].sum()),
            "distance_min": int(part["distance_min"].sum()),
            "distance_max": int(part["distance_max"].sum()),
            "normalized": float(part["normalized"].mean()),
            "ci_low": max(0.0, total_interval.low),
            "ci_high": total_interval.high,
            # an average over tasks is undefined where a task's is (a constant table has no order)
            "kendall_tau_b": float(part["kendall_tau_b"].mean(skipna=False)),
            "spearman_rho": float(part["spearman_rho"].mean(skipna=False)),
            "pairwise_accuracy": float(part["pairwise_accuracy"].mean(skipna=False)),
        }
        if truth is not None:
            total["truth_distance"] = int(part["truth_distance"].sum())
        totals.append(total)
    table = pd.concat([table, pd.DataFrame(totals)], ignore_index=True)
    note = twin_note(summary, "ranked:")
    return table if note is None else table.assign(note=note)


def _step(method: str, settings: AnalysisSettings) -> int | None:
    return settings.final_step if method == SOFT_PROMPT else None


def score_gap_table(summary: pd.DataFrame, settings: AnalysisSettings) -> pd.DataFrame:
    """Per task and method (and over all tasks): post-trained minus base score of the same
    model under the same method, averaged over the models with a post-trained twin (signed and
    absolute; a `note` names the models without one; none with a twin: not applicable)."""
    frames = []
    for method in methods_in(summary):
        step = _step(method, settings)
        scores = {
            role: unit_rows(summary, role, method, step).set_index(["task", "model"])[settings.metric] for role in ROLES
        }
        frames.append(pd.DataFrame(scores).dropna().reset_index().assign(method=method))
    pairs = pd.concat(frames, ignore_index=True)
    if pairs.empty:
        return _not_applicable_rows(summary, ("gap_abs", "gap_signed", BASE, POST), "no model has a post-trained twin")
    pairs["gap"] = pairs[POST] - pairs[BASE]
    pairs["gap_abs"] = pairs["gap"].abs()
    columns = {
        "gap_abs": ("gap_abs", "mean"),
        "gap_signed": ("gap", "mean"),
        BASE: (BASE, "mean"),
        POST: (POST, "mean"),
    }
    per_task = pairs.groupby(["task", "method"], sort=False).agg(**columns).reset_index()
    overall = pairs.groupby("method", sort=False).agg(**columns).reset_index().assign(task=ALL_TASKS)
    table = pd.concat([per_task, overall], ignore_index=True)[["task", "method", *columns]]
    table = table.sort_values(["task", "method"], key=lambda c: c.map(_order)).reset_index(drop=True)
    note = twin_note(summary, "mean over")
    return table if note is None else table.assign(note=note)


def _order(value: object) -> object:
    order = {**{m: k for k, m in enumerate(METHODS)}, ALL_TASKS: "~"}
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
                arrays = [read(UnitKey(r.model, role, r.task, method, key_step), column) for r in rows.itertuples()]
                iv = bootstrap_mean(arrays, settings.bootstrap, settings.seed, list(rows["task"]))
                bounds.append((iv.low, iv.high))
            table[f"{column}_low"], table[f"{column}_high"] = zip(*bounds, strict=True)
    table["_m"] = table["method"].map(_order)
    return table.sort_values(["role", "_m", "step"], na_position="first").drop(columns="_m").reset_index(drop=True)


def consensus_table(swap: pd.DataFrame, truth: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Per method: the Kemeny consensus of the per-task base rankings (exact, PuLP), its total
    distance to them, and its distance to the consensus of the post-trained rankings (of the
    models the swap table ranks; not applicable where it ranks none)."""
    per_task = swap[swap["task"] != ALL_TASKS]
    if per_task["distance"].isna().all():
        notes = list(dict.fromkeys(swap["note"])) if "note" in swap else ["not applicable: no rankings"]
        return pd.DataFrame(
            [
                {
                    "method": m,
                    "base_consensus": "",
                    "kemeny_distance": np.nan,
                    "post_consensus": "",
                    "distance_to_post": np.nan,
                    "note": notes[0],
                }
                for m in dict.fromkeys(per_task["method"])
            ]
        )
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
            ranked = set(consensus)
            row["distance_to_truth"] = swap_distance(
                consensus, rank_by_score({m: v for m, v in truth.items() if m in ranked})
            )
        if "note" in part:
            row["note"] = part["note"].iloc[0]
        rows.append(row)
    return pd.DataFrame(rows)
