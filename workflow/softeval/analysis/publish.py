"""Publication tables: the same table as CSV (for tools), Markdown (for reading) and LaTeX
(booktabs, best value per task in bold, for papers)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from softeval.io import atomic_write_text

BOLD = "textbf:--rwrap;"


def best_mask(table: pd.DataFrame, best: dict[str, str], group: str | None) -> pd.DataFrame:
    """Styles marking the best value of each `best` column ("min" or "max"), per group."""
    styles = pd.DataFrame("", index=table.index, columns=table.columns)
    groups = table.groupby(group, sort=False).groups.values() if group else [table.index]
    for index in groups:
        for column, direction in best.items():
            values = pd.to_numeric(table.loc[index, column], errors="coerce")
            if values.notna().any():
                target = values.min() if direction == "min" else values.max()
                styles.loc[values[np.isclose(values, target)].index, column] = BOLD
    return styles


def write_table(
    table: pd.DataFrame,
    stem: Path,
    caption: str,
    best: dict[str, str] | None = None,
    group: str | None = None,
    precision: int = 3,
) -> None:
    """Write <stem>.csv, <stem>.md and <stem>.tex."""
    atomic_write_text(stem.with_suffix(".csv"), table.to_csv(index=False, float_format=f"%.{precision + 1}f"))
    markdown = table.to_markdown(index=False, floatfmt=f".{precision}f", missingval="")
    atomic_write_text(stem.with_suffix(".md"), f"{caption}\n\n{markdown}\n")
    styler = table.style.format(precision=precision, na_rep="", escape="latex").hide(axis="index")
    styler = styler.format_index(escape="latex", axis=1)
    if best:
        styler = styler.apply(lambda frame: best_mask(frame, best, group), axis=None)
    latex = styler.to_latex(hrules=True, caption=caption.replace("_", r"\_"), position_float="centering")
    atomic_write_text(stem.with_suffix(".tex"), latex)
