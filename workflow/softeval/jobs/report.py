"""The report jobs (rules tables, figures and claims of rules/report.smk): the paper's evidence
from the aggregated scores."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from softeval.analysis import figures
from softeval.analysis.aggregate import load_summary, pilot_note
from softeval.analysis.claims.framework import Inputs, check_claims
from softeval.analysis.claims.writer import write_claims
from softeval.analysis.evidence import items_of, shared_items
from softeval.analysis.leaderboard import leaderboard_from_settings, write_leaderboard
from softeval.analysis.publish import write_table
from softeval.analysis.tables import (
    BASELINES,
    base_only_models,
    consensus_table,
    knowledge_format_table,
    models_in,
    score_gap_table,
    swap_distance_table,
    twinned_models,
)
from softeval.analysis.unit_checks import summary_line, unit_checks
from softeval.analysis.verify import read_record
from softeval.analysis.verify import stability as stability_of
from softeval.io import read_jsonl
from softeval.layout import unit_path
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

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


def ground_truth(zoo_csv: Path | None) -> dict[str, float] | None:
    """The embedded zoo's true knowledge of each base model (cloze probe), if there is a zoo."""
    if zoo_csv is None:
        return None
    table = pd.read_csv(zoo_csv)
    if not {"model", "role", "knowledge"} <= set(table.columns):
        raise InputError(f"{zoo_csv}: not a zoo table (needs model, role, knowledge); delete it to recompute")
    base = table[table["role"] == "base"]
    return dict(zip(base["model"], base["knowledge"].astype(float), strict=True))


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
        return read_jsonl(unit_path(scores_root, model, "base", task, method, step), "scores")

    return read


def base_choice_reader(loglik_root: Path):
    """The option each test example of a base-model unit chose by likelihood (what closed-task
    knowledge scores), with the number of options per question."""

    def read(model: str, task: str, method: str, step: int | None) -> tuple[list[int], int]:
        path = unit_path(loglik_root, model, "base", task, method, step)
        rows = read_jsonl(path, "option log-likelihoods")
        try:
            return [int(row["chosen"]) for row in rows], max(len(row["options"]) for row in rows)
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{path}: rows without 'chosen' or 'options'; delete it to recompute") from None

    return read


class UnitReader:
    """Per-example metric values of any unit, read once; every unit of a task must score the
    same test examples in the same order (the comparisons are paired)."""

    def __init__(self, scores_root: Path) -> None:
        self.scores_root = scores_root
        self.rows: dict[tuple, list[dict]] = {}
        self.ids: dict[str, tuple[list[str], Path]] = {}

    def unit(self, unit: tuple) -> list[dict]:
        if unit not in self.rows:
            role, model, task, method, step = unit
            path = unit_path(self.scores_root, model, role, task, method, step)
            rows = read_jsonl(path, "scores")
            ids = [row["id"] for row in rows]
            seen = self.ids.setdefault(task, (ids, path))
            if ids != seen[0]:
                raise InputError(
                    f"{path}: other test examples than {seen[1]}; delete the older file and rerun to recompute it"
                )
            self.rows[unit] = rows
        return self.rows[unit]

    def __call__(self, unit: tuple, metric: str) -> np.ndarray:
        return np.array([float(row[metric]) for row in self.unit(unit)])

    def items(self, summary: pd.DataFrame) -> dict[str, list[str]]:
        """Per task, the item each test example asks about (the world's country, else the example
        itself): tasks asking about the same countries are then resampled by one draw of them
        (evidence.declare_items)."""
        items = {}
        for task in sorted(set(summary["task"])):
            first = summary[summary["task"] == task].iloc[0]
            step = None if pd.isna(first["step"]) else int(first["step"])
            items[task] = items_of(self.unit((first["role"], first["model"], task, first["method"], step)))
        return items

    def closed_tasks(self, summary: pd.DataFrame) -> set[str]:
        """Tasks whose knowledge is option likelihood (closed: multiple choice)."""
        closed = set()
        for task in sorted(set(summary["task"])):
            first = summary[summary["task"] == task].iloc[0]
            step = None if pd.isna(first["step"]) else int(first["step"])
            rows = self.unit((first["role"], first["model"], task, first["method"], step))
            if any(row.get("knowledge_from") == "loglik" for row in rows):
                closed.add(task)
        return closed


@dataclass(frozen=True)
class Publication:
    """One publication table before it is written: its rows, file stem, caption and best-value marks."""

    name: str
    table: pd.DataFrame
    caption: str
    best: dict[str, str] | None = None
    group: str | None = None


def evidence_tables(
    summary: pd.DataFrame,
    scores_root: Path,
    loglik_root: Path,
    truth: dict[str, float] | None,
    settings: AnalysisSettings,
) -> list[Publication]:
    """Every table of the tables job, computed (nothing is written here)."""
    pilot = pilot_note(summary)
    base = summary[summary["role"] == "base"]
    methods = set(base["method"])
    checks = unit_checks(
        sorted(set(base["model"])) if "soft_prompt" in methods else [],
        sorted(set(base["task"])),
        [m for m in BASELINES if m in methods],
        base_score_reader(scores_root),
        settings,
        lambda model, task, method, step: str(unit_path(scores_root, model, "base", task, method, step)),
        base_choice_reader(loglik_root),
    )  # first: it names the two files of a unit pair whose test examples differ
    swap = swap_distance_table(summary, per_example_reader(scores_root, summary, settings.metric), settings, truth)
    consensus = consensus_table(swap, truth)
    twins = twin_caption(summary)
    return [
        Publication(
            "swap_distance",
            swap.drop(columns=["base_ranking", "post_ranking"]),
            "Swap distance between the base-model ranking under each method and the post-trained ranking "
            f"({settings.reference_method}); ties broken alphabetically (min/max over all tie-breaks), "
            "95% bootstrap interval over test examples" + twins + pilot,
            best={k: v for k, v in SWAP_BEST.items() if k in swap.columns},
            group="task",
        ),
        Publication(
            "consensus",
            consensus,
            "Kemeny consensus of the per-task base rankings under each method (exact integer program), its total "
            "swap distance to them, and its distance to the consensus of the post-trained rankings" + twins + pilot,
            best={k: "min" for k in ("distance_to_post", "distance_to_truth") if k in consensus.columns},
        ),
        Publication(
            "score_gap",
            score_gap_table(summary, settings),
            "Score gap: post-trained minus base strict score of the same model and method (mean over models)"
            + twins
            + pilot,
            best={"gap_abs": "min"},
            group="task",
        ),
        Publication(
            "unit_checks",
            checks,
            f"Per base model and task, soft prompt at step {settings.final_step}: "
            f"{summary_line(checks, settings.metric)}. "
            "only_*: test examples only one of the two methods gets right; p_*: exact McNemar p-value; "
            "choice_entropy_*: spread of the options chosen by likelihood (closed tasks; 1 = even, 0 = one option)"
            + pilot,
        ),
        Publication(
            "knowledge_format",
            knowledge_format_table(summary, UnitReader(scores_root), settings),
            "Knowledge, format and strict accuracy per role, method and tuning step (mean over models and tasks; "
            "_low/_high: 95% bootstrap interval of that mean, test examples resampled alike for every unit of a "
            "task)" + twins + pilot,
        ),
    ]


def twin_caption(summary: pd.DataFrame) -> str:
    """The caption's sentence on models without a post-trained twin ("" when every model has one)."""
    base_only = base_only_models(summary)
    if not base_only:
        return ""
    twinned = twinned_models(summary)
    over = f"{', '.join(twinned)} (with one)" if twinned else "no model: none has one"
    return (
        f". Base only, no post-trained twin: {', '.join(base_only)}; comparisons with post-trained models "
        f"are over {over}"
    )


def run_tables(
    *,
    summary_path: Path,
    scores_root: Path,
    loglik_root: Path,
    zoo_csv: Path | None,
    settings: AnalysisSettings,
    out_dir: Path,
) -> None:
    """Compute every evidence table, then write each as CSV, Markdown and LaTeX."""
    summary = load_summary(summary_path)
    with shared_items(UnitReader(scores_root).items(summary)):  # one draw of each country for every task
        tables = evidence_tables(summary, scores_root, loglik_root, ground_truth(zoo_csv), settings)
        # the run's own models and tasks (an earlier run's files under results/scores are not read)
        base = summary[summary["role"] == "base"]
        board = leaderboard_from_settings(
            scores_root, settings, models=list(base["model"].unique()), tasks=list(base["task"].unique()),
            loglik_root=loglik_root,
        )  # fmt: skip
    write_leaderboard(board, out_dir / "leaderboard")
    for publication in tables:
        write_table(
            publication.table,
            out_dir / publication.name,
            publication.caption,
            best=publication.best,
            group=publication.group,
        )


def run_figures(
    *, summary_path: Path, swap_csv: Path, gap_csv: Path, settings: AnalysisSettings, out_dir: Path
) -> None:
    summary = load_summary(summary_path)
    figures.tuning_curve(summary, set(settings.closed_tasks), out_dir / "tuning_curve")
    figures.method_scores(summary, settings.final_step, out_dir / "method_scores")
    figures.swap_distances(pd.read_csv(swap_csv), out_dir / "swap_distance")
    figures.score_gaps(pd.read_csv(gap_csv), out_dir / "score_gap")


def run_claims(
    *,
    summary_path: Path,
    swap_csv: Path,
    scores_root: Path,
    loglik_root: Path,
    settings: AnalysisSettings,
    out_stem: Path,
    published: Path | None = None,
) -> None:
    """claims.{md,csv,tex}; the zoo's ground truth comes in through the swap table's truth_distance;
    a published record's verdict stability is quoted under each claim."""
    summary = load_summary(summary_path)
    reader = UnitReader(scores_root)
    inputs = Inputs(
        summary=summary,
        swap=pd.read_csv(swap_csv),
        read=reader,
        closed_tasks=reader.closed_tasks(summary),
        items=reader.items(summary),
        settings=settings,
        choices=base_choice_reader(loglik_root),
    )
    stability = None
    if published is not None:
        record = read_record(published)
        stability = (
            published.as_posix(),
            {int(claim): stability_of(runs, "published runs") for claim, runs in record["verdicts"].items()},
        )
    write_claims(check_claims(inputs), out_stem, pilot_note(summary), inputs.swap, stability)
