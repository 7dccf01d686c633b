"""The tables, figures and claims jobs: the paper's evidence from the aggregated scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from softeval import figures
from softeval.aggregate import load_summary, pilot_note
from softeval.analysis import (
    ALL_TASKS,
    BASELINES,
    Settings,
    consensus_table,
    knowledge_format_table,
    score_gap_table,
    swap_distance_table,
)
from softeval.claims import check_claims, write_claims
from softeval.io import read_jsonl
from softeval.methods import unit_name
from softeval.publish import write_table
from softeval.schema import InputError
from softeval.unit_checks import summary_line, unit_checks

SWAP_BEST = {
    "distance": "min",
    "distance_min": "min",
    "distance_max": "min",
    "normalized": "min",
    "kendall_tau_b": "max",
    "spearman_rho": "max",
    "pairwise_accuracy": "max",
    "truth_distance": "min",
}


def settings_from(params: dict[str, Any]) -> Settings:
    return Settings(
        final_step=params["final_step"],
        first_step=params["first_step"],
        reference_method=params["reference_method"],
        bootstrap=params["bootstrap"],
        seed=params["seed"],
    )


def ground_truth(zoo_csv: Path | None) -> dict[str, float] | None:
    """The embedded zoo's true knowledge of each base model (cloze probe), if there is a zoo."""
    if zoo_csv is None:
        return None
    table = pd.read_csv(zoo_csv)
    if not {"model", "role", "knowledge"} <= set(table.columns):
        raise InputError(f"{zoo_csv}: not a zoo table (needs model, role, knowledge); delete it to recompute")
    base = table[table["role"] == "base"]
    return dict(zip(base["model"], base["knowledge"].astype(float), strict=True))


def score_file(scores_root: Path, model: str, role: str, task: str, method: str, step: int | None) -> Path:
    """Where the judge job wrote one unit's per-example verdicts."""
    return scores_root / model / role / task / f"{unit_name(method, step)}.jsonl"


def per_example_reader(scores_root: Path, summary: pd.DataFrame, metric: str):
    """Per-example verdicts of every model in one unit, for bootstrap resampling."""
    models = sorted(set(summary["model"]))

    def read(role: str, task: str, method: str, step: int | None) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        ids: list[str] | None = None
        for model in models:
            path = score_file(scores_root, model, role, task, method, step)
            rows = read_jsonl(path, "scores")
            if ids is not None and [row["id"] for row in rows] != ids:
                raise InputError(f"{path}: other test examples than {models[0]}'s; delete it to recompute")
            ids = [row["id"] for row in rows]
            out[model] = np.array([float(row[metric]) for row in rows])
        return out

    return read


def base_score_reader(scores_root: Path):
    """Per-example score rows of one base-model unit."""

    def read(model: str, task: str, method: str, step: int | None) -> list[dict]:
        return read_jsonl(score_file(scores_root, model, "base", task, method, step), "scores")

    return read


def run_tables(*, summary_path: Path, scores_root: Path, zoo_csv: Path | None, params: dict, out_dir: Path) -> None:
    summary = load_summary(summary_path)
    settings = settings_from(params)
    truth = ground_truth(zoo_csv)
    pilot = pilot_note(summary)
    swap = swap_distance_table(summary, per_example_reader(scores_root, summary, settings.metric), settings, truth)
    write_table(
        swap.drop(columns=["base_ranking", "post_ranking"]),
        out_dir / "swap_distance",
        "Swap distance between the base-model ranking under each method and the post-trained ranking "
        f"({settings.reference_method}); ties broken alphabetically (min/max over all tie-breaks), "
        "95% bootstrap interval over test examples" + pilot,
        best={k: v for k, v in SWAP_BEST.items() if k in swap.columns},
        group="task",
    )
    consensus = consensus_table(swap, truth)
    write_table(
        consensus,
        out_dir / "consensus",
        "Kemeny consensus of the per-task base rankings under each method (exact integer program), its total "
        "swap distance to them, and its distance to the consensus of the post-trained rankings" + pilot,
        best={k: "min" for k in ("distance_to_post", "distance_to_truth") if k in consensus.columns},
    )
    gap = score_gap_table(summary, settings)
    write_table(
        gap,
        out_dir / "score_gap",
        "Score gap: post-trained minus base strict score of the same model and method (mean over models)" + pilot,
        best={"gap_abs": "min"},
        group="task",
    )
    base = summary[summary["role"] == "base"]
    methods = set(base["method"])
    checks = unit_checks(
        sorted(set(base["model"])) if "soft_prompt" in methods else [],
        sorted(set(base["task"])),
        [m for m in BASELINES if m in methods],
        base_score_reader(scores_root),
        settings,
        lambda model, task, method, step: str(score_file(scores_root, model, "base", task, method, step)),
    )
    write_table(
        checks,
        out_dir / "unit_checks",
        f"Per base model and task, soft prompt at step {settings.final_step}: {summary_line(checks, settings.metric)}. "
        "only_*: test examples only one of the two methods gets right; p_vs_*: exact McNemar p-value" + pilot,
    )
    write_table(
        knowledge_format_table(summary),
        out_dir / "knowledge_format",
        "Knowledge, format and strict accuracy per role, method and tuning step (mean over models and tasks; "
        "_low/_high: mean 95% bootstrap bounds)" + pilot,
    )


def run_figures(*, summary_path: Path, swap_csv: Path, gap_csv: Path, params: dict, out_dir: Path) -> None:
    summary = load_summary(summary_path)
    figures.tuning_curve(summary, out_dir / "tuning_curve")
    figures.method_scores(summary, params["final_step"], out_dir / "method_scores")
    figures.swap_distances(pd.read_csv(swap_csv), out_dir / "swap_distance")
    figures.score_gaps(pd.read_csv(gap_csv), out_dir / "score_gap")


def run_claims(*, summary_path: Path, swap_csv: Path, params: dict, out_stem: Path) -> None:
    summary = load_summary(summary_path)
    swap = pd.read_csv(swap_csv)
    claims = check_claims(summary, swap, settings_from(params))
    note = None
    if "truth_distance" in swap.columns:
        totals = swap[swap["task"] == ALL_TASKS].set_index("method")["truth_distance"]
        per_task = swap[swap["task"] != ALL_TASKS]
        note = (
            "Swap distance of the base ranking to the true knowledge ranking (the zoo's cloze probe), summed "
            "over tasks: "
            + ", ".join(f"{m.replace('_', '-')} {int(v)}" for m, v in totals.items())
            + ". Per task: "
            + "; ".join(
                f"{task}: " + ", ".join(f"{r.method.replace('_', '-')} {int(r.truth_distance)}" for r in g.itertuples())
                for task, g in per_task.groupby("task")
            )
            + "."
        )
    write_claims(claims, out_stem, note, pilot_note(summary))
