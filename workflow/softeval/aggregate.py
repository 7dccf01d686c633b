"""Aggregation: per-example verdicts become one tidy row per model, role, task, method and step."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from softeval.io import atomic_write_text
from softeval.schema import InputError

KEYS = ["model", "role", "task", "method", "step"]
METRICS = ["knowledge", "format", "strict"]


def unit_of(scores_root: Path, path: Path) -> dict[str, object]:
    """model/role/task/method from results/scores/<model>/<role>/<task>/<method>[/step<N>].jsonl."""
    parts = path.relative_to(scores_root).with_suffix("").parts
    if len(parts) == 4:
        model, role, task, method = parts
        return {"model": model, "role": role, "task": task, "method": method, "step": None}
    if len(parts) == 5 and parts[4].startswith("step"):
        model, role, task, method, step = parts
        return {"model": model, "role": role, "task": task, "method": method, "step": int(step[4:])}
    raise InputError(f"{path}: not a scores file of the layout <model>/<role>/<task>/<method>[/step<N>].jsonl")


def aggregate_scores(scores_root: Path, paths: list[Path]) -> pd.DataFrame:
    """Accuracy of each verdict over the test examples of every unit."""
    rows = []
    for path in paths:
        verdicts = pd.read_json(path, lines=True)
        if verdicts.empty:
            raise InputError(f"{path}: no verdicts; delete it so the judge rule recomputes it")
        row: dict[str, object] = unit_of(scores_root, path) | {"n": len(verdicts)}
        for metric in METRICS:
            row[metric] = float(verdicts[metric].astype(bool).mean())
        rows.append(row)
    table = pd.DataFrame(rows, columns=[*KEYS, "n", *METRICS])
    table["step"] = table["step"].astype("Int64")
    return table.sort_values(KEYS, na_position="first").reset_index(drop=True)


def write_summary(table: pd.DataFrame, out_csv: Path) -> None:
    atomic_write_text(out_csv, table.to_csv(index=False, float_format="%.4f"))


def load_summary(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path, dtype={"step": "Int64"})
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable summary ({err}); delete it to recompute") from None
