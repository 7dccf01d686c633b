"""What the trackers (TensorBoard, W&B) share: a run's tuning curves and written leaderboard read
back, every unit's values, the soft prompts' final steps, cells as plain JSON values and the
leaderboard as a Markdown table."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.analysis.aggregate import METRICS
from softeval.analysis.export.harness import harness_columns
from softeval.names import SOFT_PROMPT
from softeval.schema import InputError

TRACKING_HINT = 'pip install "softeval[tracking]" (tensorboard and wandb)'


def read_curves(softprompts_root: Path | str) -> pd.DataFrame:
    """Every soft prompt's tuning curve under results/softprompts (<model>/<role>/<task>/curve.csv)
    as one table: model, role, task, step, loss, lr."""
    frames = []
    for path in sorted(Path(softprompts_root).glob("*/*/*/curve.csv")):
        model, role, task = path.parent.relative_to(softprompts_root).parts
        try:
            curve = pd.read_csv(path)
        except (OSError, ValueError) as err:
            raise InputError(
                f"{path}: unreadable tuning curve ({err}); delete it so the tune rule rewrites it"
            ) from None
        if "step" not in curve or "loss" not in curve:
            raise InputError(f"{path}: a tuning curve needs 'step' and 'loss' columns; delete it to retune")
        frames.append(curve.assign(model=model, role=role, task=task))
    columns = ["model", "role", "task", "step", "loss", "lr"]
    if not frames:
        return pd.DataFrame(columns=columns)
    table = pd.concat(frames, ignore_index=True)
    return table[[c for c in columns if c in table.columns]]


def read_leaderboard(path: Path | str) -> pd.DataFrame:
    """results/tables/leaderboard.csv, its caption (the first paragraph of leaderboard.md beside it)
    in the table's attrs, as build_leaderboard leaves it."""
    path = Path(path)
    try:
        table = pd.read_csv(path)
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable leaderboard ({err}); delete it so the workflow rewrites it") from None
    markdown = path.with_suffix(".md")
    if markdown.is_file():
        table.attrs["caption"] = markdown.read_text(encoding="utf-8").split("\n\n", 1)[0].strip()
    return table


def _unit_values(scores: pd.DataFrame) -> Iterator[tuple[dict[str, Any], str, float]]:
    """(row, measure, value) of every unit: the three accuracies and the harness's scores."""
    columns = harness_columns(scores)
    for row in scores.to_dict("records"):
        for measure in [*METRICS, *columns]:
            value = row.get(measure)
            if value is not None and not pd.isna(value):
                yield row, measure, float(value)


def _final_steps(scores: pd.DataFrame) -> dict[tuple[str, str, str], int]:
    prompts = scores[scores["method"] == SOFT_PROMPT].dropna(subset=["step"])
    return {(m, r, t): int(s) for (m, r, t), s in prompts.groupby(["model", "role", "task"])["step"].max().items()}


def _board_rows(leaderboard: pd.DataFrame | None) -> list[dict[str, Any]]:
    return [] if leaderboard is None else leaderboard.to_dict("records")


def _plain(value: Any) -> Any:
    """A cell as a JSON-able Python value (NaN and NA as None)."""
    if value is None or (not isinstance(value, str | bytes) and pd.api.types.is_scalar(value) and pd.isna(value)):
        return None
    if hasattr(value, "item"):
        return value.item()
    return value


def markdown_table(table: pd.DataFrame, columns: Sequence[str] | None = None) -> str:
    columns = [c for c in (columns or table.columns) if c in table.columns]

    def cell(value: Any) -> str:
        value = _plain(value)
        text = "" if value is None else f"{value:.4f}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row[c]) for c in columns) + " |" for row in table.to_dict("records")]
    return "\n".join(lines) + "\n"


BOARD_METRICS = ("rank", *METRICS)
BOARD_COLUMNS = ("task", "rank", "place", "model", "method", "n", *METRICS, "vs_above", "flags")
