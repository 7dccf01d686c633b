"""Per base model and task: what the soft prompt did to format, knowledge and the strict score.

The claims average over models and tasks; a reviewer also wants each unit, and wants to see
whether a unit's difference is a real one or a few test examples. So every comparison comes
with its paired evidence: the examples only one side gets right and the exact McNemar p-value
of that split. A unit falls short only where the evidence says so (p < 0.05, per unit: a
descriptive count, uncorrected; the caption adds how many survive Holm's correction over all
of them); a difference of an example or two is reported as "within noise", not as a failure.
Knowledge is "flat" only where the claims' equivalence test shows it: the unit's 90% interval
of the change lies within ±0.05 (two one-sided tests at 5%; a wide interval is not evidence of no
change). On closed tasks the spread
of the chosen options is reported too: a prompt that pushes every answer onto one letter keeps
chance-level knowledge "flat" while destroying it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from softeval.analysis.evidence import (
    COLLAPSE_ENTROPY,
    EQUIVALENCE_LEVEL,
    FORMAT_SATURATED,
    KNOWLEDGE_FLAT,
    SIGNIFICANCE,
    Paired,
    choice_spread,
    equivalent,
    holm,
    paired_bootstrap,
    paired_counts,
)
from softeval.names import SOFT_PROMPT
from softeval.schema import InputError
from softeval.settings import AnalysisSettings

# (model, task, method, step) -> one score row per test example, in test order
ScoreReader = Callable[[str, str, str, int | None], list[dict]]
# (model, task, method, step) -> where that unit's score rows come from, for error messages
ScoreLocator = Callable[[str, str, str, int | None], str]
# (model, task, method, step) -> (the option each example chose by likelihood, options per question)
ChoiceReader = Callable[[str, str, str, int | None], tuple[list[int], int]]

OUTCOMES = {"first better": "soft prompt better", "second better": "baseline better", "within noise": "within noise"}


def _unit_label(model: str, task: str, method: str, step: int | None) -> str:
    return f"{model}/{task} {method}" + ("" if step is None else f" step {step}")


def paired(first: list[dict], second: list[dict], metric: str) -> Paired:
    if [row["id"] for row in first] != [row["id"] for row in second]:
        raise ValueError("paired comparison of different test examples")
    return paired_counts(_values(first, metric), _values(second, metric))


def _values(rows: list[dict], metric: str) -> np.ndarray:
    return np.array([bool(row[metric]) for row in rows])


def _mean(rows: list[dict], metric: str) -> float:
    return sum(float(row[metric]) for row in rows) / len(rows)


def unit_checks(
    models: list[str],
    tasks: list[str],
    baselines: list[str],
    read: ScoreReader,
    settings: AnalysisSettings,
    locate: ScoreLocator = _unit_label,
    choices: ChoiceReader | None = None,
) -> pd.DataFrame:
    """One row per base model x task: format at the final step; knowledge from the first to the
    final step with its McNemar p-value (flatness is checked on closed tasks, whose knowledge is
    option likelihood, with the spread of the chosen options); the strict score against each
    baseline with its paired evidence.

    `locate` names the files `read` reads, so a mismatch names the two files to look at."""
    first, final, metric = settings.first_step, settings.final_step, settings.metric
    rows = []
    for task in tasks:
        for model in models:
            start, end = read(model, task, SOFT_PROMPT, first), read(model, task, SOFT_PROMPT, final)
            closed = any(row.get("knowledge_from") == "loglik" for row in end)
            fmt, score = _mean(end, "format"), _mean(end, metric)
            known_start, known_end = _mean(start, "knowledge"), _mean(end, "knowledge")
            change = known_end - known_start
            moved = _compare(start, end, "knowledge", locate, (model, task, SOFT_PROMPT, first), final)
            row: dict = {
                "model": model,
                "task": task,
                "format": fmt,
                "format_ok": fmt >= FORMAT_SATURATED,
                f"knowledge_step{first}": known_start,
                f"knowledge_step{final}": known_end,
                "knowledge_change": change,
                "p_knowledge_change": moved.p_value,
            }
            flat: object = pd.NA
            if closed:  # flat only where the equivalence test shows it (the claims' test, on one unit)
                interval = paired_bootstrap(
                    [(_values(end, "knowledge"), _values(start, "knowledge"))],
                    None,
                    settings.bootstrap,
                    settings.seed,
                    [task],
                )
                # the 90% interval: what the equivalence test (TOST at 5% each side) reads
                row["knowledge_change_low"], row["knowledge_change_high"] = interval.bounds(EQUIVALENCE_LEVEL)
                flat = equivalent(interval, KNOWLEDGE_FLAT)
                if choices is not None:
                    before, after = (choice_spread(*choices(model, task, SOFT_PROMPT, s)) for s in (first, final))
                    row[f"choice_entropy_step{first}"] = before.entropy
                    row[f"choice_entropy_step{final}"] = after.entropy
                    row["choice_top"] = f"{after.top_letter} {after.top_share:.2f}"
                    row["choice_collapsed"] = after.entropy < COLLAPSE_ENTROPY
                    flat = flat and not row["choice_collapsed"]
            row["knowledge_flat_ok"] = flat
            row[f"{metric}_soft_prompt"] = score
            short = False
            for baseline in baselines:
                other = read(model, task, baseline, None)
                split = _compare(end, other, metric, locate, (model, task, baseline, None), final)
                row[f"{metric}_{baseline}"] = _mean(other, metric)
                row[f"only_soft_prompt_vs_{baseline}"] = split.only_first
                row[f"only_{baseline}"] = split.only_second
                row[f"p_vs_{baseline}"] = split.p_value
                row[f"vs_{baseline}"] = OUTCOMES[split.outcome]
                short |= split.outcome == "second better"
            row[f"{metric}_ok"] = not short
            rows.append(row)
    return pd.DataFrame(rows)


def _compare(
    end: list[dict], other: list[dict], metric: str, locate: ScoreLocator, other_unit: tuple, final: int
) -> Paired:
    """Paired split of the final soft-prompt unit against another unit of the same model and task."""
    try:
        return paired(end, other, metric)
    except ValueError:
        model, task = other_unit[0], other_unit[1]
        raise InputError(
            f"{locate(*other_unit)} and {locate(model, task, 'soft_prompt', final)} "
            "score different test examples; delete the older file and rerun to recompute it"
        ) from None


def summary_line(table: pd.DataFrame, metric: str) -> str:
    """How many units pass each check, for the table's caption."""
    if table.empty:
        return "no soft-prompt units in this run"
    closed = table["knowledge_flat_ok"].dropna()
    noise = sum((table[c] == "within noise").sum() for c in table.columns if c.startswith("vs_"))
    worse = sum((table[c] == "baseline better").sum() for c in table.columns if c.startswith("vs_"))
    collapsed = int(table["choice_collapsed"].fillna(False).astype(bool).sum()) if "choice_collapsed" in table else 0
    p_values = [float(p) for c in table.columns if c.startswith("p_vs_") for p in table[c]]
    baseline_better = [str(v) == "baseline better" for c in table.columns if c.startswith("vs_") for v in table[c]]
    survive = sum(r and b for r, b in zip(holm(p_values), baseline_better, strict=True))
    return (
        f"format >= {FORMAT_SATURATED} in {int(table['format_ok'].sum())} of {len(table)} units; "
        f"closed-task knowledge flat (90% interval of the change within ±{KNOWLEDGE_FLAT}, two one-sided "
        "tests at 5%; choices "
        f"not collapsed) in {int(closed.astype(bool).sum())} of {len(closed)}"
        + (f" ({collapsed} collapsed onto one option)" if collapsed else "")
        + f"; no baseline significantly better on {metric} (exact McNemar p < {SIGNIFICANCE}, per unit, "
        f"descriptive: uncorrected) in {int(table[f'{metric}_ok'].sum())} of {len(table)} "
        f"({noise} comparisons within noise, {worse} with the baseline significantly better, {survive} of them "
        f"after Holm's correction over all {len(p_values)} comparisons)"
    )
