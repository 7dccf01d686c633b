"""Aggregation: per-example verdicts become one tidy row per model, role, task, method and step.

Each accuracy comes with a 95% bootstrap confidence interval over the test examples
(scipy.stats.bootstrap, percentile method, seeded), so every table cell that quotes it can
say how sure it is.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from softeval.io import atomic_file, atomic_write_text
from softeval.layout import parse_unit_path
from softeval.schema import InputError

KEYS = ["model", "role", "task", "method", "step"]
METRICS = ["knowledge", "format", "strict"]


def bootstrap_ci(values: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float]:
    """95% percentile-bootstrap interval of the mean; a constant sample has a zero-width one."""
    if len(values) < 2 or np.all(values == values[0]):
        mean = float(values.mean()) if len(values) else float("nan")
        return mean, mean
    result = stats.bootstrap(
        (values,), np.mean, n_resamples=n_resamples, confidence_level=0.95, method="percentile", rng=seed
    )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def read_verdicts(path: Path) -> pd.DataFrame:
    try:
        verdicts = pd.read_json(path, lines=True)
    except ValueError as err:
        raise InputError(f"{path}: unreadable verdicts ({err}); delete it so the judge rule recomputes it") from None
    missing = [m for m in ["id", *METRICS] if m not in verdicts.columns]
    if verdicts.empty or missing:
        raise InputError(f"{path}: no verdicts or no '{(missing or ['id'])[0]}' field; delete it to recompute")
    return verdicts


def aggregate_scores(
    scores_root: Path,
    paths: list[Path],
    n_resamples: int = 1000,
    seed: int = 0,
    test_totals: dict[str, int] | None = None,
) -> pd.DataFrame:
    """Accuracy of each verdict over the test examples of every unit, with bootstrap intervals,
    and lm-evaluation-harness's scores of the same responses (columns "lm_eval:<name>"; its acc and
    acc_norm over softeval's own option continuations, "options:<name>").

    test_totals: each task's full test split size (a pilot run evaluates a sample: n < test_total).
    """
    rows = []
    harness_columns: dict[str, None] = {}
    for path in paths:
        verdicts = read_verdicts(path)
        row: dict[str, object] = parse_unit_path(scores_root, path).as_row() | {"n": len(verdicts)}
        row["test_total"] = (test_totals or {}).get(str(row["task"]), len(verdicts))
        for metric in METRICS:
            values = verdicts[metric].astype(bool).to_numpy(dtype=float)
            row[metric] = float(values.mean())
            row[f"{metric}_low"], row[f"{metric}_high"] = bootstrap_ci(values, n_resamples, seed)
        row["llm_judged"] = float((verdicts["judge"] != "rule").mean()) if "judge" in verdicts else 0.0
        for prefix in ("lm_eval", "options"):  # the harness's scores; acc / acc_norm over our continuations
            if prefix in verdicts:
                harness = pd.DataFrame(list(verdicts[prefix]))
                for name in harness.columns:
                    harness_columns[f"{prefix}:{name}"] = None
                    row[f"{prefix}:{name}"] = float(harness[name].astype(bool).mean())
        rows.append(row)
    columns = [*KEYS, "n", "test_total", *METRICS, *(f"{m}_{end}" for m in METRICS for end in ("low", "high"))]
    table = pd.DataFrame(rows, columns=[*columns, "llm_judged", *harness_columns])
    table["step"] = table["step"].astype("Int64")
    return table.sort_values(KEYS, na_position="first").reset_index(drop=True)


def pilot_note(summary: pd.DataFrame) -> str:
    """The caption line of a pilot run (test_limit): which tasks were sampled, how many of how many."""
    if "test_total" not in summary.columns:
        return ""
    sizes = summary.groupby("task")[["n", "test_total"]].max()
    sampled = sizes[sizes["n"] < sizes["test_total"]]
    if sampled.empty:
        return ""
    parts = ", ".join(f"{task} {row.n:,} of {row.test_total:,}" for task, row in sampled.iterrows())
    return f" Pilot run: a seeded sample of the test split, the same for every model and method ({parts})."


def write_summary(table: pd.DataFrame, out_csv: Path, out_parquet: Path | None = None) -> None:
    atomic_write_text(out_csv, table.to_csv(index=False, float_format="%.4f"))
    if out_parquet is not None:
        with atomic_file(out_parquet) as tmp:
            table.to_parquet(tmp, index=False)


def load_summary(path: Path) -> pd.DataFrame:
    try:
        table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path, dtype={"step": "Int64"})
    except (OSError, ValueError) as err:
        raise InputError(f"{path}: unreadable summary ({err}); delete it to recompute") from None
    missing = [c for c in [*KEYS, *METRICS] if c not in table.columns]
    if missing:
        raise InputError(f"{path}: summary lacks column '{missing[0]}'; delete it to recompute")
    return table
