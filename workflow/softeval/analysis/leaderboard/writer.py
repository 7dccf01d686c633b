"""Writing the leaderboard: leaderboard.csv (every column), leaderboard.md (the text for reading:
estimates with intervals, places, separability, flags) and leaderboard.tex (the compact columns)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.leaderboard.units import METRICS
from softeval.analysis.publish import write_table
from softeval.io import atomic_write_text

# A narrower table for reading (the HTML report, a paper): the estimates, places and flags.
COMPACT_COLUMNS = (
    "task",
    "place",
    "model",
    "method",
    *(f"{m}{suffix}" for m in METRICS for suffix in ("", "_low", "_high")),
    "tied_with",
    "vs_above",
    "flags",
)


def interval_text(row: Mapping[str, Any], metric: str) -> str:
    """0.412 [0.350, 0.470]"""
    if math.isnan(row[metric]):
        return ""
    return f"{row[metric]:.3f} [{row[f'{metric}_low']:.3f}, {row[f'{metric}_high']:.3f}]"


def leaderboard_text(table: pd.DataFrame) -> str:
    """The leaderboard for reading (a terminal, leaderboard.md): the mean over tasks first, then
    each task; estimates with their intervals, places, separability and flags."""
    metric = table.attrs.get("metric", "strict")
    sections = []
    for task, rows in table.groupby("task", sort=False):
        view = pd.DataFrame(
            {
                "place": rows["place"],
                "model": rows["model"],
                **{name: [interval_text(r, name) for _, r in rows.iterrows()] for name in METRICS},
                "vs place above": [
                    f"tied with {r['tied_with']}"
                    if isinstance(r["tied_with"], str) and r["tied_with"]
                    else r["vs_above"]
                    for _, r in rows.iterrows()
                ],
                "flags": rows["flags"].fillna(""),
            }
        )
        method = rows["method"].iloc[0]
        sections.append(f"### {task} ({method}; ranked by {metric})\n\n{view.to_markdown(index=False)}")
    return "\n\n".join(sections) + "\n"


def write_leaderboard(
    table: pd.DataFrame, out_stem: Path | str, caption: str | None = None, columns: Sequence[str] | None = None
) -> None:
    """<out_stem>.csv (every column), .md (leaderboard_text, for reading) and .tex (`columns`,
    default COMPACT_COLUMNS; the best estimate of the ranking metric in bold per task)."""
    metric = table.attrs.get("metric", "strict")
    text = caption if caption is not None else table.attrs.get("caption", "Leaderboard of base models")
    columns = COMPACT_COLUMNS if columns is None else columns
    unknown = [c for c in columns if c not in table.columns]
    if unknown:
        raise ValueError(f"write_leaderboard: no column {unknown[0]!r}; use {', '.join(table.columns)}")
    out_stem = Path(out_stem)
    compact = table[list(columns)]
    best = {metric: "max"} if metric in compact.columns else None
    write_table(compact, out_stem, text, best=best, group="task" if "task" in compact.columns else None)
    atomic_write_text(out_stem.with_suffix(".csv"), table.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(out_stem.with_suffix(".md"), f"{text}\n\n{leaderboard_text(table)}")
