"""The zoo's ground-truth table: recipe, measured knowledge and zero-shot format per model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from softeval.io import atomic_write_text
from softeval.names import ROLES


def zoo_table(models: list[dict[str, Any]], probes_dir: Path) -> pd.DataFrame:
    """One row per model and role: recipe, measured accuracies in [0, 1], and ranks."""
    rows = []
    for model in models:
        for role in ROLES:
            path = probes_dir / model["name"] / f"{role}.json"
            try:
                probe = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as err:
                raise ValueError(f"{path}: probe result missing or corrupt ({err}); delete it and rerun") from err
            row: dict[str, Any] = {
                "model": model["name"],
                "role": role,
                "size": model["zoo"]["size"],
                "coverage": model["zoo"]["coverage"],
                "format_exposure": model["zoo"]["format_exposure"],
                "knowledge": probe["knowledge_mean"],
            }
            row.update({f"knowledge_{rel}": value for rel, value in probe["knowledge"].items()})
            formats = probe["zero_shot_format"]
            row.update({f"zero_shot_format_{task}": value for task, value in formats.items()})
            open_tasks = probe["open_tasks"]
            row["zero_shot_format_open"] = sum(formats[t] for t in open_tasks) / len(open_tasks) if open_tasks else None
            strict = probe["zero_shot_strict"]
            row.update({f"zero_shot_strict_{task}": value for task, value in strict.items()})
            row["zero_shot_strict"] = sum(strict.values()) / len(strict)
            rows.append(row)
    return add_ranks(pd.DataFrame(rows))


def add_ranks(table: pd.DataFrame) -> pd.DataFrame:
    """Rank models within each role (1 = best) by knowledge, and by what zero-shot shows.

    The zero-shot ranking is what a benchmark reader would see: strict score first, then
    open-task format accuracy; remaining ties go alphabetically by model name.
    """
    table = table.copy()
    for _, rows in table.groupby("role"):
        by_knowledge = rows.sort_values(["knowledge", "model"], ascending=[False, True])
        by_zero_shot = rows.sort_values(
            ["zero_shot_strict", "zero_shot_format_open", "model"], ascending=[False, False, True]
        )
        table.loc[by_knowledge.index, "rank_knowledge"] = range(1, len(rows) + 1)
        table.loc[by_zero_shot.index, "rank_zero_shot"] = range(1, len(rows) + 1)
    return table.astype({"rank_knowledge": int, "rank_zero_shot": int})


def write_table(table: pd.DataFrame, csv_path: Path, md_path: Path) -> None:
    atomic_write_text(csv_path, table.to_csv(index=False, float_format="%.4f"))
    atomic_write_text(md_path, table.to_markdown(index=False, floatfmt=".3f") + "\n")
