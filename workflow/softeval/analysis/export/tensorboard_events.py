"""TensorBoard event files of a run (`export_tensorboard`), one TensorBoard run per model and role;
optional: `pip install "softeval[tracking]"`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.export.harness import _step
from softeval.analysis.export.tracking import (
    BOARD_COLUMNS,
    BOARD_METRICS,
    TRACKING_HINT,
    _board_rows,
    _plain,
    _unit_values,
    markdown_table,
)
from softeval.io import atomic_directory
from softeval.names import BASE
from softeval.schema import InputError


def export_tensorboard(
    scores: pd.DataFrame,
    leaderboard: pd.DataFrame | None,
    logdir: Path | str,
    *,
    curves: pd.DataFrame | None = None,
) -> Path:
    """TensorBoard event files of a run, written as one folder that replaces `logdir` whole.

    One TensorBoard run per model and role (<logdir>/<model>/<role>), so a chart overlays the
    models; tags `<measure>/<task>/<method>` for knowledge, format, strict and each harness
    column (lm_eval:<name>, options:<name>), at the soft prompt's tuning step (the snapshots make
    its curve) and at step 0 for zero_shot and few_shot; `tune_loss/<task>` and `tune_lr/<task>`
    per tuning step from `curves` (read_curves); the leaderboard's rank, knowledge, format and
    strict as `leaderboard/<task>/<metric>` in each base model's run (step 0), and the table
    itself as text in the run <logdir>/leaderboard (tag `leaderboard`)."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as err:
        raise InputError(f"TensorBoard export needs the tensorboard package ({err}); {TRACKING_HINT}") from None
    target = Path(logdir)
    writers: dict[tuple[str, str], Any] = {}
    with atomic_directory(target) as tmp:

        def writer(*parts: str) -> Any:
            if parts not in writers:
                writers[parts] = SummaryWriter(log_dir=str(tmp.joinpath(*parts)))
            return writers[parts]

        try:
            for row, measure, value in _unit_values(scores):
                step = _step(row["step"]) or 0
                tag = f"{measure}/{row['task']}/{row['method']}"
                writer(row["model"], row["role"]).add_scalar(tag, value, global_step=step)
            for row in (curves if curves is not None else pd.DataFrame()).to_dict("records"):
                run = writer(row["model"], row["role"])
                run.add_scalar(f"tune_loss/{row['task']}", float(row["loss"]), global_step=int(row["step"]))
                if "lr" in row and not pd.isna(row["lr"]):
                    run.add_scalar(f"tune_lr/{row['task']}", float(row["lr"]), global_step=int(row["step"]))
            board = _board_rows(leaderboard)
            for row in board:
                for metric in BOARD_METRICS:
                    if metric in row and _plain(row[metric]) is not None:
                        tag = f"leaderboard/{row['task']}/{metric}"
                        writer(row["model"], BASE).add_scalar(tag, float(row[metric]), global_step=0)
            if leaderboard is not None:
                caption = leaderboard.attrs.get("caption", "Leaderboard of base models")
                writer("leaderboard").add_text(
                    "leaderboard", f"{caption}\n\n{markdown_table(leaderboard, BOARD_COLUMNS)}"
                )
        finally:
            for run in writers.values():
                run.close()
    return target
