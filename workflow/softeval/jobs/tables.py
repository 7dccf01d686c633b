"""`softeval tables` (rule tables): the paper's evidence tables (swap distances, consensus, score
gaps, unit checks, knowledge vs format) and the leaderboard, from the aggregated scores, each as
CSV, Markdown and LaTeX."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from softeval.analysis.aggregate import load_summary, pilot_note
from softeval.analysis.evidence import shared_items
from softeval.analysis.leaderboard import leaderboard_from_settings, write_leaderboard
from softeval.analysis.publish import write_table
from softeval.analysis.tables import (
    BASELINES,
    SwapDraws,
    base_only_models,
    consensus_table,
    knowledge_format_table,
    score_gap_table,
    swap_distance_table,
    swap_draws,
    twinned_models,
    write_swap_draws,
)
from softeval.analysis.unit_checks import summary_line, unit_checks
from softeval.jobs.arguments import add_analysis
from softeval.jobs.report import UnitReader, base_choice_reader, base_score_reader, per_example_reader
from softeval.layout import SWAP_DRAWS_TABLE, unit_path
from softeval.names import BASE, SOFT_PROMPT
from softeval.schema import InputError
from softeval.settings import AnalysisSettings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_analysis(parser, scores=True)
    parser.add_argument("--truth", help="the zoo table (results/tables/zoo.csv): each model's knowledge")
    parser.add_argument("--out-dir", required=True)


def run(args: argparse.Namespace) -> None:
    run_tables(
        summary_path=Path(args.summary),
        scores_root=Path(args.scores_root),
        loglik_root=Path(args.loglik_root),
        zoo_csv=Path(args.truth) if args.truth else None,
        settings=AnalysisSettings.parse(args.settings, "tables"),
        out_dir=Path(args.out_dir),
    )


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
    base = table[table["role"] == BASE]
    return dict(zip(base["model"], base["knowledge"].astype(float), strict=True))


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
) -> tuple[list[Publication], SwapDraws]:
    """Every table of the tables job, computed (nothing is written here), and the swap-distance
    bootstrap's draws that the swap table read (the claims job reads them too)."""
    pilot = pilot_note(summary)
    base = summary[summary["role"] == BASE]
    methods = set(base["method"])
    checks = unit_checks(
        sorted(set(base["model"])) if SOFT_PROMPT in methods else [],
        sorted(set(base["task"])),
        [m for m in BASELINES if m in methods],
        base_score_reader(scores_root),
        settings,
        lambda model, task, method, step: str(unit_path(scores_root, model, BASE, task, method, step)),
        base_choice_reader(loglik_root),
    )  # first: it names the two files of a unit pair whose test examples differ
    per_example = per_example_reader(scores_root, summary, settings.metric)
    draws = swap_draws(summary, per_example, settings)
    swap = swap_distance_table(summary, per_example, settings, truth, draws)
    consensus = consensus_table(swap, truth)
    twins = twin_caption(summary)
    publications = [
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
    return publications, draws


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
        tables, draws = evidence_tables(summary, scores_root, loglik_root, ground_truth(zoo_csv), settings)
        # the run's own models and tasks (an earlier run's files under results/scores are not read)
        base = summary[summary["role"] == BASE]
        board = leaderboard_from_settings(
            scores_root, settings, models=list(base["model"].unique()), tasks=list(base["task"].unique()),
            loglik_root=loglik_root,
        )  # fmt: skip
    write_swap_draws(draws, out_dir / f"{SWAP_DRAWS_TABLE}.parquet")  # claim 3 reads them: one bootstrap
    write_leaderboard(board, out_dir / "leaderboard")
    for publication in tables:
        write_table(
            publication.table,
            out_dir / publication.name,
            publication.caption,
            best=publication.best,
            group=publication.group,
        )
